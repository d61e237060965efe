//! The words of every name, where they occur, and which words a mistyped word could be.
//!
//! # Typo tolerance: deletion neighbourhoods (SymSpell)
//! Every indexed word of 4 characters or more is listed under a hash of itself and of each
//! string made by deleting one of its characters (`paris` under `paris`, `aris`, `pris`, ...).
//! A query word looks up its own deletions the same way, to depth 1 for words of 4 to 7
//! characters and to depth 2 for longer ones, and every word found is checked with the true
//! (optimal string alignment) distance. Why this and not n-grams: a lookup is a few dozen
//! binary searches in one sorted array (microseconds, no long posting lists of common
//! trigrams to merge), and the table costs about 9 entries of 8 bytes per word.
//! One edit is always found (insertion, deletion, substitution, adjacent transposition).
//! Of two edits in a long word, those that leave one side's deletion set touching the
//! other's are found (two insertions; an insertion with a substitution, a deletion or a
//! transposition); two substitutions or two deletions in the query are not, which would
//! need depth-2 deletions of every indexed word (five times the memory).

use rustc_hash::FxHashMap;

use super::normalize::fold;

/// Words shorter than this (in characters) are matched exactly only.
pub const MIN_TYPO_CHARS: usize = 4;
/// Words of this many characters or more may carry two edits.
pub const TWO_EDIT_CHARS: usize = 8;

/// The edits a query word may carry: 0 below 4 characters, 1 up to 7, 2 from 8.
pub fn max_edits(word: &str) -> u8 {
    match word.chars().count() {
        n if n < MIN_TYPO_CHARS => 0,
        n if n < TWO_EDIT_CHARS => 1,
        _ => 2,
    }
}

/// One occurrence of a word: in name `name` of place `place`, at word `pos` of `len`.
#[derive(Clone, Copy, Debug)]
pub struct Posting {
    pub place: u32,
    pub name: u16,
    pub pos: u8,
    pub len: u8,
}

/// Sorted distinct words with their postings and deletion table.
pub struct Vocab {
    /// The words, sorted, back to back: word `w` is `text[starts[w]..starts[w + 1]]` (one
    /// buffer rather than 400,000 small allocations).
    text: String,
    starts: Vec<u32>,
    /// `postings[at[w]..at[w + 1]]` are the occurrences of word `w`.
    at: Vec<u32>,
    postings: Vec<Posting>,
    /// (hash of a word or of a one-character deletion of it, word), sorted.
    deletes: Vec<(u32, u32)>,
}

impl Vocab {
    /// Builds the vocabulary from (name, place, name index) triples; names are folded into
    /// words here, one at a time, so no copy of every name's words is held at once.
    pub fn build<'a>(names: impl Iterator<Item = (&'a str, u32, u16)>) -> Vocab {
        let mut ids: FxHashMap<Box<str>, u32> = FxHashMap::default();
        let mut occurrences: Vec<(u32, Posting)> = Vec::new();
        for (text, place, name) in names {
            // one folded string per name, its words borrowed: a word is copied only the
            // first time it is seen
            let folded = fold(text);
            let len = folded.split(' ').filter(|w| !w.is_empty()).count();
            let len = len.min(u8::MAX as usize) as u8;
            let words = folded.split(' ').filter(|w| !w.is_empty());
            for (pos, w) in words.take(u8::MAX as usize).enumerate() {
                let id = match ids.get(w) {
                    Some(&id) => id,
                    None => {
                        let id = ids.len() as u32;
                        ids.insert(w.into(), id);
                        id
                    }
                };
                occurrences.push((
                    id,
                    Posting {
                        place,
                        name,
                        pos: pos as u8,
                        len,
                    },
                ));
            }
        }
        occurrences.shrink_to_fit();
        // renumber the words in sorted order, so exact lookups are a binary search
        let mut sorted: Vec<(Box<str>, u32)> = ids.into_iter().collect();
        sorted.sort_unstable();
        let mut rank = vec![0u32; sorted.len()];
        for (r, (_, id)) in sorted.iter().enumerate() {
            rank[*id as usize] = r as u32;
        }
        occurrences.sort_unstable_by_key(|&(id, p)| (rank[id as usize], p.place, p.name, p.pos));
        let mut at = vec![0u32; sorted.len() + 1];
        for &(id, _) in &occurrences {
            at[rank[id as usize] as usize + 1] += 1;
        }
        for i in 1..at.len() {
            at[i] += at[i - 1];
        }
        drop(rank);
        let mut postings: Vec<Posting> = occurrences.into_iter().map(|(_, p)| p).collect();
        postings.shrink_to_fit();
        let mut text = String::with_capacity(sorted.iter().map(|(w, _)| w.len()).sum());
        let mut starts = Vec::with_capacity(sorted.len() + 1);
        // sized exactly (a word and each of its one-character deletions), so the largest
        // table of the index never doubles past its size while it fills
        let mut deletes = Vec::with_capacity(
            sorted
                .iter()
                .map(|(w, _)| w.chars().count())
                .filter(|&n| n >= MIN_TYPO_CHARS)
                .map(|n| n + 1)
                .sum(),
        );
        for (i, (w, _)) in sorted.into_iter().enumerate() {
            starts.push(text.len() as u32);
            text.push_str(&w);
            if w.chars().count() >= MIN_TYPO_CHARS {
                for_each_deletion(&w, 1, &mut |h| deletes.push((h, i as u32)));
            }
        }
        starts.push(text.len() as u32);
        deletes.sort_unstable();
        deletes.dedup();
        deletes.shrink_to_fit();
        Vocab {
            text,
            starts,
            at,
            postings,
            deletes,
        }
    }

    fn word(&self, w: u32) -> &str {
        &self.text[self.starts[w as usize] as usize..self.starts[w as usize + 1] as usize]
    }

    /// The occurrences of word `w`.
    pub fn postings(&self, w: u32) -> &[Posting] {
        &self.postings[self.at[w as usize] as usize..self.at[w as usize + 1] as usize]
    }

    /// Indexed words within `max_edits` of `word` (folded), with their distance.
    pub fn lookup(&self, word: &str, max_edits: u8) -> Vec<(u32, u8)> {
        let mut out: Vec<(u32, u8)> = Vec::new();
        if let Some(i) = self.find(word) {
            out.push((i, 0));
        }
        if max_edits == 0 {
            return out;
        }
        let query: Vec<char> = word.chars().collect();
        let mut candidates: Vec<u32> = Vec::new();
        for_each_deletion(word, max_edits, &mut |h| {
            let from = self.deletes.partition_point(|&(k, _)| k < h);
            for &(k, w) in &self.deletes[from..] {
                if k != h {
                    break;
                }
                candidates.push(w);
            }
        });
        candidates.sort_unstable();
        candidates.dedup();
        for w in candidates {
            let cand: Vec<char> = self.word(w).chars().collect();
            if let Some(d) = distance(&query, &cand, max_edits) {
                if d > 0 {
                    out.push((w, d));
                }
            }
        }
        out
    }
}

impl Vocab {
    /// The id of `word` when it is indexed.
    fn find(&self, word: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, (self.starts.len() - 1) as u32);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.word(mid).cmp(word) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

/// Calls `f` with the hash of `word` and of every string made by deleting up to `depth`
/// characters from it (repeats possible).
fn for_each_deletion(word: &str, depth: u8, f: &mut impl FnMut(u32)) {
    let chars: Vec<char> = word.chars().collect();
    let mut skip = Vec::with_capacity(depth as usize);
    delete_rec(&chars, 0, depth, &mut skip, f);
}

fn delete_rec(
    chars: &[char],
    from: usize,
    depth: u8,
    skip: &mut Vec<usize>,
    f: &mut impl FnMut(u32),
) {
    f(hash_without(chars, skip));
    if depth == 0 || chars.len() - skip.len() <= 1 {
        return;
    }
    for i in from..chars.len() {
        skip.push(i);
        delete_rec(chars, i + 1, depth - 1, skip, f);
        skip.pop();
    }
}

/// FNV-1a over the characters not in `skip`, folded to 32 bits (collisions only cost a
/// distance check).
fn hash_without(chars: &[char], skip: &[usize]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, &c) in chars.iter().enumerate() {
        if !skip.contains(&i) {
            h = (h ^ c as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    (h ^ (h >> 32)) as u32
}

/// Optimal string alignment distance between `a` and `b` (Levenshtein plus adjacent
/// transpositions), or `None` when it exceeds `max`.
pub fn distance(a: &[char], b: &[char], max: u8) -> Option<u8> {
    let max = max as usize;
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let w = b.len() + 1;
    let mut rows = vec![0usize; 3 * w];
    for (j, cell) in rows[..w].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        let (cur, prev, prev2) = (i % 3, (i + 2) % 3, (i + 1) % 3);
        rows[cur * w] = i;
        let mut best = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[prev * w + j] + 1)
                .min(rows[cur * w + j - 1] + 1)
                .min(rows[prev * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[prev2 * w + j - 2] + 1);
            }
            rows[cur * w + j] = d;
            best = best.min(d);
        }
        if best > max {
            return None;
        }
    }
    let d = rows[(a.len() % 3) * w + b.len()];
    (d <= max).then_some(d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn distance_counts_edits_and_transpositions() {
        assert_eq!(distance(&chars("london"), &chars("london"), 2), Some(0));
        assert_eq!(distance(&chars("londn"), &chars("london"), 2), Some(1));
        assert_eq!(distance(&chars("lodnon"), &chars("london"), 2), Some(1));
        assert_eq!(distance(&chars("lxndxn"), &chars("london"), 2), Some(2));
        assert_eq!(distance(&chars("lxndxn"), &chars("london"), 1), None);
        assert_eq!(distance(&chars("ab"), &chars("abcd"), 1), None);
        assert_eq!(distance(&chars(""), &chars("a"), 1), Some(1));
    }

    #[test]
    fn allows_no_edit_below_4_characters_one_up_to_7_two_from_8() {
        assert_eq!(max_edits("rom"), 0);
        assert_eq!(max_edits("rome"), 1);
        assert_eq!(max_edits("londonn"), 1);
        assert_eq!(max_edits("muenchen"), 2);
        assert_eq!(max_edits("мюнхен"), 1);
    }

    fn vocab(words: &[&str]) -> Vocab {
        Vocab::build(words.iter().enumerate().map(|(i, n)| (*n, i as u32, 0)))
    }

    fn found(v: &Vocab, word: &str) -> Vec<(String, u8)> {
        let mut r: Vec<(String, u8)> = v
            .lookup(word, max_edits(word))
            .into_iter()
            .map(|(w, d)| (v.word(w).to_string(), d))
            .collect();
        r.sort();
        r
    }

    #[test]
    fn finds_words_one_edit_away() {
        let v = vocab(&["london", "londrina", "paris", "rome", "lund"]);
        assert_eq!(found(&v, "londn"), [("london".to_string(), 1)]);
        assert_eq!(found(&v, "lodnon"), [("london".to_string(), 1)]);
        assert_eq!(found(&v, "pariss"), [("paris".to_string(), 1)]);
        assert_eq!(found(&v, "rone"), [("rome".to_string(), 1)]);
        assert_eq!(found(&v, "paris"), [("paris".to_string(), 0)]);
        // three letters: exact only
        assert!(found(&v, "rom").is_empty());
    }

    #[test]
    fn finds_long_words_two_edits_away() {
        let v = vocab(&["philadelphia", "muenchen", "amsterdam"]);
        assert_eq!(found(&v, "munchen"), [("muenchen".to_string(), 1)]);
        // two insertions; an insertion and a substitution; an insertion and a transposition
        assert_eq!(found(&v, "amssterdamm"), [("amsterdam".to_string(), 2)]);
        assert_eq!(found(&v, "amxterdamm"), [("amsterdam".to_string(), 2)]);
        assert_eq!(
            found(&v, "philadlephiaa"),
            [("philadelphia".to_string(), 2)]
        );
        // the documented gap: two substitutions
        assert!(found(&v, "ansterdan").is_empty());
    }

    #[test]
    fn lists_where_each_word_occurs() {
        let v = vocab(&["New York", "York"]);
        let york = v.lookup("york", 0)[0].0;
        let p: Vec<(u32, u8, u8)> = v
            .postings(york)
            .iter()
            .map(|p| (p.place, p.pos, p.len))
            .collect();
        assert_eq!(p, [(0, 1, 2), (1, 0, 1)]);
    }
}
