//! No CRM answer can panic the process: the CRM adapters' parsers fed extreme and malformed
//! values (proptest, a fixed number of cases in the ordinary test command). The token answers
//! (HubSpot's `expires_in` up to 2^64 - 1, Salesforce's `instance_url`), the owner look-ups'
//! answers (HubSpot's owners pages, Salesforce's query answers), the refusals (any status, any
//! body, any `Retry-After`), the rate-limit headers (HubSpot's `X-HubSpot-RateLimit-*`,
//! Salesforce's `Sforce-Limit-Info`), and what their durations become (a kept token's
//! replacement time, the stored pace's turns).
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use proptest::prelude::*;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use shared::crm::adapter::{Session, MAX_TOKEN_LIFETIME};
use shared::crm::hubspot::{answers as hubspot, OwnersPage, TokenAnswer};
use shared::crm::reading::{parse_retry_after, PaceSignal};
use shared::crm::salesforce::{answers as salesforce, QueryAnswer};
use shared::model::pace::{PaceRule, PaceState, TurnAsk, UsageHold};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// Header values as a CRM could send them: numbers of any size and sign, dates, garbage.
fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i128>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
        (0u64..=300_000_000_000).prop_map(|s| httpdate::fmt_http_date(
            UNIX_EPOCH + Duration::from_secs(s.min(253_402_300_799))
        )),
        Just("18446744073709551615".to_string()),
        Just("99999999999999999999999999999".to_string()),
        Just("-1".to_string()),
        Just(String::new()),
        "[ -~]{0,40}",
        "api-usage=[0-9]{0,25}/[0-9]{0,25}(; api-bursts=[0-9]{0,5}/[0-9]{0,5})?",
        "[a-z-]{0,12}=[0-9-]{0,22}/[0-9-]{0,22};?[ -~]{0,20}",
    ]
}

fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_str(value) {
            map.insert(HeaderName::from_static(name), value);
        }
    }
    map
}

/// JSON bodies shaped like the answers, with extreme and wrongly typed values.
fn body() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        any::<u64>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        Just(serde_json::json!("18446744073709551616")),
        Just(serde_json::Value::Null),
    ];
    let text = prop_oneof![
        "[ -~]{0,30}".prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null)
    ];
    prop_oneof![
        (text.clone(), number.clone()).prop_map(|(t, n)| serde_json::json!({"access_token": t, "expires_in": n}).to_string()),
        (text.clone(), text.clone()).prop_map(|(t, u)| serde_json::json!({"access_token": t, "instance_url": u}).to_string()),
        (text.clone(), text.clone(), any::<bool>()).prop_map(|(id, e, a)| serde_json::json!({"results": [{"id": id, "email": e, "archived": a}], "paging": {"next": {"after": id}}}).to_string()),
        (number.clone(), text.clone()).prop_map(|(n, id)| serde_json::json!({"totalSize": n, "done": true, "records": [{"Id": id}]}).to_string()),
        (text.clone(), text.clone()).prop_map(|(c, m)| serde_json::json!([{"errorCode": c, "message": m, "fields": []}]).to_string()),
        (text.clone(), text).prop_map(|(p, m)| serde_json::json!({"policyName": p, "message": m}).to_string()),
        "[ -~]{0,200}",
        ".{0,100}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn token_answers_never_panic_and_their_lifetime_is_clamped(text in body(), seconds in any::<u64>(), margin in any::<u64>()) {
        let bytes = text.as_bytes();
        if let Ok(token) = TokenAnswer::parse(bytes) {
            prop_assert!(token.lifetime() <= MAX_TOKEN_LIFETIME);
        }
        let _ = shared::crm::salesforce::TokenAnswer::parse(bytes);
        let asked = Instant::now();
        let at = Session::replace_at(asked, Duration::from_secs(seconds), Duration::from_secs(margin));
        prop_assert!(at >= asked && at <= asked + MAX_TOKEN_LIFETIME);
    }

    #[test]
    fn owner_answers_never_panic(text in body(), email in "[ -~]{0,30}") {
        if let Ok(page) = OwnersPage::parse(text.as_bytes()) {
            let _ = page.active_with(&email);
            let _ = page.next_after();
        }
        if let Ok(answer) = QueryAnswer::parse(text.as_bytes()) {
            let _ = answer.the_user();
        }
    }

    #[test]
    fn refusals_and_limit_headers_never_panic_and_waits_stay_bounded(
        status in any::<u16>(),
        text in body(),
        retry in header_value(),
        interval in header_value(),
        remaining in header_value(),
        daily in header_value(),
        limit_info in header_value(),
        now in 0u64..=4_102_444_800,
        share in any::<f64>(),
        limit_wait in any::<u64>(),
    ) {
        let now = UNIX_EPOCH + Duration::from_secs(now);
        let map = headers(&[
            ("retry-after", retry.clone()),
            ("x-hubspot-ratelimit-interval-milliseconds", interval),
            ("x-hubspot-ratelimit-remaining", remaining),
            ("x-hubspot-ratelimit-secondly-remaining", "0".into()),
            ("x-hubspot-ratelimit-daily-remaining", daily),
            ("sforce-limit-info", limit_info),
        ]);
        let day = Duration::from_secs(24 * 3600);
        for classified in [
            hubspot::classify(status, &map, &text, now),
            salesforce::classify(status, &map, &text, now, Duration::from_secs(limit_wait.min(86_400))),
        ] {
            prop_assert!(classified.detail.chars().count() <= 200);
            match classified.next {
                shared::crm::Next::Retry { at_least: Some(wait) } => prop_assert!(wait <= day),
                shared::crm::Next::Daily { retry_after: Some(wait) } => prop_assert!(wait <= day),
                _ => {}
            }
        }
        if let Some(wait) = parse_retry_after(&retry, now) {
            prop_assert!(wait <= day);
        }
        for signal in hubspot::limits(&map)
            .into_iter()
            .chain(salesforce::limits(&map, share, Duration::from_secs(limit_wait)))
        {
            if let PaceSignal::Hold(wait) = signal {
                prop_assert!(wait <= Duration::from_secs(60));
            }
        }
        let _ = salesforce::detail_of(&text);
        let _ = hubspot::detail_of(&text);
    }

    #[test]
    fn the_paces_arithmetic_never_panics(
        now in any::<i64>(),
        tat in proptest::option::of(any::<i64>()),
        horizon in any::<i64>(),
        per_second in any::<u32>(),
        burst in any::<u32>(),
        until in any::<i64>(),
    ) {
        let state = PaceState {
            tat_us: tat,
            usage: Some(UsageHold { used: 1, limit: 2, until_us: until }),
        };
        let ask = TurnAsk {
            now_us: now,
            rule: PaceRule::per_second(per_second, burst),
            horizon_us: horizon,
            hint_us: tat,
        };
        let _ = state.take(&ask);
        let _ = PaceState { usage: None, ..state }.take(&ask);
    }
}
