//! Text normalisation for matching street names, house numbers and cities: the query and
//! the data go through the same function, so "10 Downing St" and "Downing Street",
//! "Hauptstr. 5" and "Hauptstraße", "Rue de l'Église" and "rue de l eglise" meet.

/// Abbreviations and their long forms, after accents are folded and case lowered. A few
/// are ambiguous ("st" is Street at the end of a name and Saint before it; see [`tokens`]).
const LONG_FORMS: &[(&str, &str)] = &[
    ("str", "strasse"),
    ("ave", "avenue"),
    ("av", "avenue"),
    ("rd", "road"),
    ("blvd", "boulevard"),
    ("bd", "boulevard"),
    ("bvd", "boulevard"),
    ("dr", "drive"),
    ("ln", "lane"),
    ("pl", "place"),
    ("ct", "court"),
    ("sq", "square"),
    ("hwy", "highway"),
    ("pkwy", "parkway"),
    ("ter", "terrace"),
    ("cres", "crescent"),
    ("cl", "close"),
    ("gdns", "gardens"),
    ("mt", "mount"),
    ("ste", "sainte"),
    ("ch", "chemin"),
    ("imp", "impasse"),
    ("pza", "piazza"),
    ("c", "calle"),
    ("n", "north"),
    ("s", "south"),
    ("e", "east"),
    ("w", "west"),
];

/// The words of `s` for matching: accents folded to ASCII (ß is "ss"), lower case, every
/// other character a separator (but see possessives below), abbreviations in their long form. German compounds ending
/// in "str" ("Hauptstr.") are spelt out as "...strasse".
pub fn tokens(s: &str) -> Vec<String> {
    let mut folded = deunicode::deunicode(s).to_ascii_lowercase();
    // A possessive stays one word ("St John's Wood" is "johns"); other apostrophes
    // separate ("l'eglise" is "l eglise").
    for at in (1..folded.len().saturating_sub(1)).rev() {
        let b = folded.as_bytes();
        if b[at] == b'\''
            && b[at + 1] == b's'
            && !b.get(at + 2).is_some_and(u8::is_ascii_alphanumeric)
        {
            folded.remove(at);
        }
    }
    let words: Vec<&str> = folded
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let last = words.len().saturating_sub(1);
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if *w == "st" {
                return if i == last { "street" } else { "saint" }.to_string();
            }
            if let Some((_, long)) = LONG_FORMS.iter().find(|(short, _)| short == w) {
                return (*long).to_string();
            }
            if w.len() > 3 && w.ends_with("str") {
                return format!("{w}asse");
            }
            (*w).to_string()
        })
        .collect()
}

/// A house number for comparison: "10 A", "10a" and "10-A" are all "10a".
pub fn number(s: &str) -> String {
    deunicode::deunicode(s)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The leading digits of a normalised house number ("10a" has "10").
pub fn number_digits(n: &str) -> &str {
    let end = n.find(|c: char| !c.is_ascii_digit()).unwrap_or(n.len());
    &n[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations_meet_their_long_forms() {
        assert_eq!(tokens("Downing St"), tokens("Downing Street"));
        assert_eq!(tokens("5th Ave."), tokens("5th Avenue"));
        assert_eq!(tokens("Abbey Rd"), tokens("Abbey Road"));
        assert_eq!(tokens("Hauptstr."), tokens("Hauptstraße"));
        assert_eq!(tokens("Berliner Str."), tokens("Berliner Straße"));
        assert_eq!(
            tokens("Bd Saint-Germain"),
            tokens("Boulevard Saint Germain")
        );
        assert_eq!(
            tokens("St John's Wood Rd"),
            vec!["saint", "johns", "wood", "road"]
        );
    }

    #[test]
    fn case_accents_and_punctuation_do_not_matter() {
        assert_eq!(tokens("Rue de l'Église"), vec!["rue", "de", "l", "eglise"]);
        assert_eq!(tokens("  MAIN   street "), vec!["main", "street"]);
        assert_eq!(tokens("Łódź"), vec!["lodz"]);
        assert!(tokens("--").is_empty());
    }

    #[test]
    fn house_numbers_compare_without_spaces_or_case() {
        assert_eq!(number("10 A"), "10a");
        assert_eq!(number("10-a"), "10a");
        assert_eq!(number_digits("10a"), "10");
        assert_eq!(number_digits("b"), "");
    }
}
