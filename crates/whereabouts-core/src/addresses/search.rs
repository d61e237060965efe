//! House-number search: `search("10", "Downing St", "London")` finds 10 Downing Street.
//!
//! # Score (0 to 1)
//! `0.5 * street + 0.3 * number + 0.2 * city`, where
//! - `street` is the Jaccard similarity of the normalised word sets (see
//!   [`normalize::tokens`]); streets below 0.5 are not candidates;
//! - `number` is 1 for the same normalised number, 0.8 for the same digits with another
//!   letter ("10" against "10a"), and other numbers are not candidates; 1 when none is asked;
//! - `city` is the share of the asked city words found in the address's city, suburb and
//!   postcode; 1 when none is asked.

use std::collections::{HashMap, HashSet};

use super::normalize;
use super::store::{Address, AddressIndex};

/// A search result.
#[derive(Clone, Debug, PartialEq)]
pub struct AddressMatch<'a> {
    pub address: Address<'a>,
    pub score: f64,
}

/// Streets by word, built on the first search.
pub struct StreetIndex {
    words: HashMap<String, Vec<u32>>,
    street_words: HashMap<u32, Vec<String>>,
    /// Address indexes sorted by street string.
    by_street: Vec<u32>,
}

/// Streets considered per query at most, best first: a query of common words ("Main")
/// must not scan a country.
const MAX_STREETS: usize = 256;

impl StreetIndex {
    fn build(index: &AddressIndex) -> StreetIndex {
        let mut by_street: Vec<u32> = (0..index.addresses.len() as u32).collect();
        by_street.sort_unstable_by_key(|&i| index.addresses[i as usize].street);
        let mut street_words: HashMap<u32, Vec<String>> = HashMap::new();
        let mut words: HashMap<String, Vec<u32>> = HashMap::new();
        let mut last = None;
        for &i in &by_street {
            let s = index.addresses[i as usize].street;
            if last == Some(s) {
                continue;
            }
            last = Some(s);
            let mut t = normalize::tokens(index.string(s).unwrap_or(""));
            t.sort();
            t.dedup();
            for w in &t {
                words.entry(w.clone()).or_default().push(s);
            }
            street_words.insert(s, t);
        }
        StreetIndex {
            words,
            street_words,
            by_street,
        }
    }
}

fn jaccard(a: &HashSet<&str>, b: &[String]) -> f64 {
    let common = b.iter().filter(|w| a.contains(w.as_str())).count();
    let union = a.len() + b.len() - common;
    if union == 0 {
        0.0
    } else {
        common as f64 / union as f64
    }
}

impl AddressIndex {
    /// Addresses matching a house number, street and city (each free text; `number` and
    /// `city` may be empty), best first, at most `limit`.
    pub fn search(
        &self,
        number: &str,
        street: &str,
        city: &str,
        limit: usize,
    ) -> Vec<AddressMatch<'_>> {
        let idx = self.search.get_or_init(|| StreetIndex::build(self));
        let q_street: HashSet<String> = normalize::tokens(street).into_iter().collect();
        if q_street.is_empty() || limit == 0 {
            return Vec::new();
        }
        let q_street_ref: HashSet<&str> = q_street.iter().map(String::as_str).collect();
        let q_num = normalize::number(number);
        let q_city: HashSet<String> = normalize::tokens(city).into_iter().collect();

        let mut streets: Vec<(f64, u32)> = q_street
            .iter()
            .filter_map(|w| idx.words.get(w))
            .flatten()
            .copied()
            .collect::<HashSet<u32>>()
            .into_iter()
            .map(|s| (jaccard(&q_street_ref, &idx.street_words[&s]), s))
            .filter(|(score, _)| *score >= 0.5)
            .collect();
        streets.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        streets.truncate(MAX_STREETS);

        let mut place_words: HashMap<u32, Vec<String>> = HashMap::new();
        let mut words_of = |s: u32| -> Vec<String> {
            place_words
                .entry(s)
                .or_insert_with(|| normalize::tokens(self.string(s).unwrap_or("")))
                .clone()
        };
        let mut hits: Vec<(f64, usize)> = Vec::new();
        for (street_score, s) in streets {
            let from = idx
                .by_street
                .partition_point(|&i| self.addresses[i as usize].street < s);
            for &i in &idx.by_street[from..] {
                let r = &self.addresses[i as usize];
                if r.street != s {
                    break;
                }
                let number_score = if q_num.is_empty() {
                    1.0
                } else {
                    let n = normalize::number(self.string(r.number).unwrap_or(""));
                    if n == q_num {
                        1.0
                    } else if !q_num.is_empty()
                        && normalize::number_digits(&n) == normalize::number_digits(&q_num)
                        && !normalize::number_digits(&n).is_empty()
                    {
                        0.8
                    } else {
                        continue;
                    }
                };
                let city_score = if q_city.is_empty() {
                    1.0
                } else {
                    let mut have: HashSet<String> = HashSet::new();
                    for p in [r.city, r.suburb, r.postcode] {
                        have.extend(words_of(p));
                    }
                    q_city.iter().filter(|w| have.contains(*w)).count() as f64 / q_city.len() as f64
                };
                let score = 0.5 * street_score + 0.3 * number_score + 0.2 * city_score;
                hits.push((score, i as usize));
            }
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.truncate(limit);
        hits.into_iter()
            .map(|(score, i)| AddressMatch {
                address: self.address(i, 0.0),
                score,
            })
            .collect()
    }
}
