//! Forward geocoding against the real `data/search.bin`: names in other languages, typos,
//! "city, region, country", word order, restrictions, preferences and the score scale;
//! and refusing damaged files.

use std::path::PathBuf;
use std::sync::OnceLock;

use whereabouts_core::search::{Level, SearchHit, SearchIndex, SearchOptions, ViewBox};

fn real() -> &'static SearchIndex {
    static S: OnceLock<SearchIndex> = OnceLock::new();
    S.get_or_init(|| {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/search.bin");
        SearchIndex::open(&path).expect("data/search.bin opens")
    })
}

fn search(q: &str) -> Vec<SearchHit<'static>> {
    search_with(q, SearchOptions::default())
}

fn search_with(q: &str, options: SearchOptions) -> Vec<SearchHit<'static>> {
    let limit = if options.limit == 0 {
        10
    } else {
        options.limit
    };
    real().search(q, &SearchOptions { limit, ..options })
}

/// "name, state, CC" of the first hit.
fn top(q: &str) -> String {
    describe(search(q).first())
}

fn describe(h: Option<&SearchHit<'_>>) -> String {
    h.map_or("none".into(), |h| {
        format!("{}, {}, {}", h.name, h.state.unwrap_or("-"), h.country_code)
    })
}

#[test]
fn finds_munich_by_its_names_in_several_languages() {
    for q in [
        "Munich",
        "münchen",
        "MUENCHEN",
        "Monaco di Baviera",
        "Мюнхен",
        "munchen germany",
    ] {
        assert_eq!(top(q), "Munich, Bavaria, DE", "{q}");
    }
}

#[test]
fn answers_a_state_or_country_named_alone_at_its_seat_above_towns_one_edit_away() {
    // (level, name, state, country, seat near lat/lon)
    let bavaria = (Level::State, "Bavaria", Some("Bavaria"), "DE", 48.14, 11.58);
    let texas = (Level::State, "Texas", Some("Texas"), "US", 30.27, -97.74);
    let germany = (Level::Country, "Germany", None, "DE", 52.52, 13.41);
    let france = (Level::Country, "France", None, "FR", 48.85, 2.35);
    for (q, (level, name, state, cc, lat, lon)) in [
        ("Bavaria", bavaria),
        ("Texas", texas),
        ("Germany", germany),
        ("France", france),
        ("  FRANCE ", france),
        // a typo, and a country's name in another language
        ("Bavria", bavaria),
        ("Deutschland", germany),
    ] {
        let hits = search(q);
        let h = &hits[0];
        assert_eq!(
            (h.level, h.name, h.state, h.county, h.country_code),
            (level, name, state, None, cc),
            "{q}"
        );
        assert!(
            (h.lat - lat).abs() < 0.05 && (h.lon - lon).abs() < 0.05,
            "{q}: {h:?}"
        );
    }
    // the towns one edit away still come, below
    assert!(search("Bavaria")
        .iter()
        .any(|h| h.name == "Szombathely" && h.level == Level::Place));
    // countrycodes restrict areas too
    let us = search_with(
        "Bavaria",
        SearchOptions {
            countries: vec![*b"US"],
            ..Default::default()
        },
    );
    assert!(us
        .iter()
        .all(|h| h.level == Level::Place && h.country_code == "US"));
}

#[test]
fn a_place_named_alike_stays_first_when_it_is_as_important() {
    assert_eq!(top("Paris"), "Paris, Île-de-France, FR");
    assert_eq!(search("Paris")[0].level, Level::Place);
    // a place's name that is only part of a name is no area ("texas city")
    assert!(search("texas city").iter().all(|h| h.level == Level::Place));
}

#[test]
fn understands_city_region_country() {
    assert_eq!(top("paris, texas"), "Paris, Texas, US");
    assert_eq!(top("paris texas"), "Paris, Texas, US");
    assert_eq!(top("Paris, TX"), "Paris, Texas, US");
    assert_eq!(top("springfield, illinois"), "Springfield, Illinois, US");
    assert_eq!(top("Springfield, IL, USA"), "Springfield, Illinois, US");
    assert_eq!(top("london, canada"), "London, Ontario, CA");
    assert_eq!(
        top("Cambridge, Massachusetts"),
        "Cambridge, Massachusetts, US"
    );
    // country names in other languages
    assert_eq!(top("Londres, Royaume-Uni"), "London, England, GB");
    assert_eq!(top("texas paris"), "Paris, Texas, US");
}

#[test]
fn big_places_win_equal_matches() {
    assert_eq!(top("paris"), "Paris, Île-de-France, FR");
    assert_eq!(top("London"), "London, England, GB");
    assert_eq!(top("sydney"), "Sydney, New South Wales, AU");
}

#[test]
fn tolerates_typos() {
    assert_eq!(top("londn"), "London, England, GB");
    assert_eq!(top("lodnon"), "London, England, GB");
    assert_eq!(top("Amsterdm"), "Amsterdam, North Holland, NL");
    assert_eq!(top("barcelonna"), "Barcelona, Catalonia, ES");
    assert_eq!(top("Philadelpia"), "Philadelphia, Pennsylvania, US");
}

#[test]
fn an_exact_match_ranks_above_a_typo_of_a_bigger_place() {
    // any exact name (main or alternate, accents aside) scores at least 0.9 * 0.99; one edit
    // at most 0.9 * 0.9 + 0.05 (importance) without a viewbox
    let exact = search("berlin");
    assert_eq!(describe(exact.first()), "Berlin, State of Berlin, DE");
    assert!(exact.iter().all(|h| h.score >= 0.891), "{exact:?}");
    assert!(exact
        .iter()
        .any(|h| h.name == "Berlín" && h.country_code == "SV"));
    let typo = search("berln");
    assert_eq!(describe(typo.first()), "Berlin, State of Berlin, DE");
    assert!(typo[0].score <= 0.86);
}

#[test]
fn country_codes_restrict_and_a_viewbox_prefers() {
    let us = search_with(
        "paris",
        SearchOptions {
            countries: vec![*b"US"],
            ..Default::default()
        },
    );
    assert!(!us.is_empty() && us.iter().all(|h| h.country_code == "US"));
    assert_eq!(us[0].state, Some("Texas"));
    // around north-east Texas: Paris TX first, Paris FR still answered
    let boxed = search_with(
        "paris",
        SearchOptions {
            viewbox: Some(ViewBox {
                left: -97.0,
                right: -94.0,
                top: 34.5,
                bottom: 32.0,
            }),
            ..Default::default()
        },
    );
    assert_eq!(describe(boxed.first()), "Paris, Texas, US");
    assert!(boxed.iter().any(|h| h.country_code == "FR"));
    let nowhere = search_with(
        "paris",
        SearchOptions {
            countries: vec![*b"JP"],
            ..Default::default()
        },
    );
    assert!(nowhere.iter().all(|h| h.country_code == "JP"));
}

#[test]
fn viewboxes_across_the_antimeridian_contain_both_sides() {
    let v = ViewBox {
        left: 170.0,
        right: -170.0,
        top: 10.0,
        bottom: -10.0,
    };
    assert!(v.contains(0.0, 175.0) && v.contains(0.0, -175.0) && !v.contains(0.0, 0.0));
    assert!(!v.contains(20.0, 175.0));
}

#[test]
fn scores_stay_on_the_documented_scale_and_limit_caps() {
    let hits = search_with(
        "springfield",
        SearchOptions {
            limit: 5,
            ..Default::default()
        },
    );
    assert_eq!(hits.len(), 5);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    // an exact name with nothing left over: quality 1, so at least 0.9
    assert!(hits[0].score >= 0.9);
    assert!(top("ZZZZQQQQXXXX").eq("none"));
    assert!(search("").is_empty() && search(" ,;- ").is_empty());
}

#[test]
fn a_word_that_matches_nothing_costs_more_than_a_typo() {
    let hits = search("paris narnia");
    // Paris is still found, below full quality
    assert_eq!(describe(hits.first()), "Paris, Île-de-France, FR");
    assert!(hits[0].score < 0.7);
}

#[test]
fn refuses_damaged_files() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/search.bin");
    let bytes = std::fs::read(path).unwrap();
    let mut flipped = bytes.clone();
    flipped[1000] ^= 1;
    assert!(SearchIndex::from_bytes(&flipped)
        .err()
        .unwrap()
        .contains("checksum"));
    assert!(SearchIndex::from_bytes(&bytes[..bytes.len() - 8]).is_err());
    assert!(SearchIndex::from_bytes(b"WBSEARC1").is_err());
    assert!(SearchIndex::open(&PathBuf::from("/nonexistent/search.bin")).is_err());
}
