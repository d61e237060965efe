//! Folding text for matching: the same function folds the names at index time and the query,
//! so both sides always agree.
//!
//! Unicode compatibility decomposition (NFKD) splits accented letters into a base letter and
//! combining marks, which are dropped (`München` → `munchen`, `Ｔｏｋｙｏ` → `tokyo`); letters
//! that do not decompose get their usual Latin spelling (`ß` → `ss`, `Ø` → `o`, `Æ` → `ae`,
//! `Ł` → `l`); everything is lower case; any run of characters that are neither letters nor
//! digits (spaces, punctuation, apostrophes, hyphens) becomes one space, so `Saint-Étienne`,
//! `saint etienne` and `SAINT ÉTIENNE` are the same tokens.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// `text` folded: lower case, without accents, words separated by single spaces.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.nfkd() {
        if is_combining_mark(c) {
            continue;
        }
        if !c.is_alphanumeric() {
            gap = !out.is_empty();
            continue;
        }
        if gap {
            out.push(' ');
            gap = false;
        }
        for l in c.to_lowercase() {
            match l {
                'ß' => out.push_str("ss"),
                'æ' => out.push_str("ae"),
                'œ' => out.push_str("oe"),
                'þ' => out.push_str("th"),
                'ø' => out.push('o'),
                'ł' => out.push('l'),
                'đ' | 'ð' => out.push('d'),
                'ı' => out.push('i'),
                'ħ' => out.push('h'),
                _ => out.push(l),
            }
        }
    }
    out
}

/// The words of `text` after [`fold`].
pub fn tokens(text: &str) -> Vec<String> {
    fold(text)
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_case_accents_and_letters_without_a_decomposition() {
        assert_eq!(fold("München"), "munchen");
        assert_eq!(fold("MÜNCHEN"), "munchen");
        assert_eq!(fold("Straße"), "strasse");
        assert_eq!(fold("Ærøskøbing"), "aeroskobing");
        assert_eq!(fold("Łódź"), "lodz");
        assert_eq!(fold("Reykjavík"), "reykjavik");
        assert_eq!(fold("Ｔｏｋｙｏ"), "tokyo");
        assert_eq!(fold("São Paulo"), "sao paulo");
    }

    #[test]
    fn turns_punctuation_and_white_space_into_single_spaces() {
        assert_eq!(fold("  Saint-Étienne "), "saint etienne");
        assert_eq!(fold("Paris,\tTexas!!"), "paris texas");
        assert_eq!(fold("L'Aquila"), "l aquila");
        assert_eq!(fold("'s-Hertogenbosch"), "s hertogenbosch");
        assert_eq!(fold("--- ,,"), "");
        assert_eq!(tokens("Frankfurt (Oder)"), ["frankfurt", "oder"]);
    }

    #[test]
    fn keeps_other_scripts_as_words() {
        assert_eq!(fold("Мюнхен"), "мюнхен");
        assert_eq!(fold("東京"), "東京");
        assert_eq!(tokens("Ελλάδα, Αθήνα"), ["ελλαδα", "αθηνα"]);
    }
}
