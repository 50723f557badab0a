//! Distribution models (BEHAVIOR 6, step 14): who gets the turn among the eligible members.
//!
//! Pure functions of the pool (in order), the eligible set and the rotation state; the engine
//! writes the new state in the same transaction as the assignment.

use crate::model::dispatch::RotationState;

/// Round robin: the first eligible member after `last` in pool order, wrapping around; the first
/// eligible member when `last` is `None` or has left the pool. Ineligible members are skipped,
/// not queued. `None` when nobody is eligible.
pub fn round_robin<'a>(
    pool: &'a [String], eligible: &dyn Fn(&str) -> bool, last: Option<&str>,
) -> Option<&'a String> {
    let start = last
        .and_then(|l| pool.iter().position(|m| m == l))
        .map_or(0, |i| i + 1);
    (0..pool.len())
        .map(|k| &pool[(start + k) % pool.len()])
        .find(|m| eligible(m))
}

/// Percentage: with N the router's rotation assignments so far and c a member's count, the
/// eligible member with the largest `w * (N + 1) - c` (w = percentage / 100); ties in pool order.
/// Over any run with everyone eligible, each count stays within 1 of its exact share.
///
/// Weights are compared exactly: percentages are scaled to micro-percent integers. A member of
/// weight 0 is never picked; `None` when only such members are eligible.
pub fn percentage<'a>(
    pool: &'a [(String, f64)], eligible: &dyn Fn(&str) -> bool, state: &RotationState,
) -> Option<&'a String> {
    let n = state.total as i128;
    let mut best: Option<(&String, i128)> = None;
    for (email, pct) in pool.iter().filter(|(e, _)| eligible(e)) {
        let micro = micro_percent(*pct);
        // A member with weight 0 is never assigned by rotation (BEHAVIOR 6, step 14), even
        // when every weighted member is unavailable.
        if micro <= 0 {
            continue;
        }
        let count = state.counts.get(email).copied().unwrap_or(0) as i128;
        // w * (N + 1) - c, scaled by 100 * 10^6.
        let score = micro * (n + 1) - count * 100_000_000;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((email, score));
        }
    }
    best.map(|(e, _)| e)
}

/// Whether a percentage weight is 0 (to the micro-percent `percentage` compares with): such a
/// member is never assigned by rotation (BEHAVIOR 6, step 14). A missing weight is 0.
pub fn is_zero_weight(percentage: Option<f64>) -> bool {
    micro_percent(percentage.unwrap_or(0.0)) <= 0
}

fn micro_percent(percentage: f64) -> i128 {
    (percentage * 1_000_000.0).round() as i128
}

/// Teams rotation: the next team after `state.last_team` (in router order, wrapping) that has an
/// eligible member; inside it, round robin with the team's own state. Returns (team, member).
pub fn teams<'a>(
    teams: &'a [(String, Vec<String>)], eligible: &dyn Fn(&str) -> bool, state: &RotationState,
) -> Option<(&'a String, &'a String)> {
    let start = state
        .last_team
        .as_deref()
        .and_then(|l| teams.iter().position(|(t, _)| t == l))
        .map_or(0, |i| i + 1);
    (0..teams.len())
        .map(|k| &teams[(start + k) % teams.len()])
        .find_map(|(team, members)| {
            let last = state.team_last_member.get(team).map(String::as_str);
            round_robin(members, eligible, last).map(|m| (team, m))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("m{i}@x.example")).collect()
    }

    #[test]
    fn round_robin_starts_at_the_first_eligible_and_wraps() {
        let pool = names(3);
        let all = |_: &str| true;
        assert_eq!(round_robin(&pool, &all, None), Some(&pool[0]));
        assert_eq!(round_robin(&pool, &all, Some(&pool[0])), Some(&pool[1]));
        assert_eq!(round_robin(&pool, &all, Some(&pool[2])), Some(&pool[0]));
        assert_eq!(
            round_robin(&pool, &all, Some("gone@x.example")),
            Some(&pool[0])
        );
    }

    #[test]
    fn round_robin_skips_ineligible_members_without_queueing_them() {
        let pool = names(4);
        let not_m1 = |m: &str| m != "m1@x.example";
        assert_eq!(round_robin(&pool, &not_m1, Some(&pool[0])), Some(&pool[2]));
        // m1 becomes eligible again: it does not jump the queue, the turn goes on from m2.
        let all = |_: &str| true;
        assert_eq!(round_robin(&pool, &all, Some(&pool[2])), Some(&pool[3]));
        let none = |_: &str| false;
        assert_eq!(round_robin(&pool, &none, None), None);
    }

    #[test]
    fn a_weight_zero_member_is_never_picked_even_when_the_weighted_ones_are_unavailable() {
        let pool = vec![
            ("zero@x.example".to_string(), 0.0),
            ("all@x.example".to_string(), 100.0),
        ];
        let mut state = RotationState::default();
        let all = |_: &str| true;
        for _ in 0..5 {
            assert_eq!(
                percentage(&pool, &all, &state).map(String::as_str),
                Some("all@x.example")
            );
            *state.counts.entry("all@x.example".into()).or_default() += 1;
            state.total += 1;
        }
        let only_zero = |m: &str| m == "zero@x.example";
        assert_eq!(percentage(&pool, &only_zero, &state), None);
        assert_eq!(
            percentage(&pool, &only_zero, &RotationState::default()),
            None
        );
    }

    #[test]
    fn percentage_follows_the_weights_exactly_over_a_hundred_turns() {
        let pool: Vec<(String, f64)> = names(3).into_iter().zip([50.0, 30.0, 20.0]).collect();
        let mut state = RotationState::default();
        for _ in 0..100 {
            let chosen = percentage(&pool, &|_| true, &state).unwrap().clone();
            *state.counts.entry(chosen).or_default() += 1;
            state.total += 1;
        }
        let counts: Vec<u64> = pool.iter().map(|(e, _)| state.counts[e]).collect();
        assert_eq!(counts, [50, 30, 20]);
    }

    #[test]
    fn teams_rotation_moves_to_the_next_team_with_an_eligible_member() {
        let teams_list = vec![
            ("A".to_string(), vec!["a1".to_string(), "a2".to_string()]),
            ("B".to_string(), vec!["b1".to_string()]),
            ("C".to_string(), vec!["c1".to_string()]),
        ];
        let mut state = RotationState::default();
        let not_b = |m: &str| m != "b1";
        let mut got = Vec::new();
        for _ in 0..4 {
            let (team, member) = teams(&teams_list, &not_b, &state).unwrap();
            got.push(member.clone());
            state.last_team = Some(team.clone());
            state.team_last_member.insert(team.clone(), member.clone());
        }
        assert_eq!(got, ["a1", "c1", "a2", "c1"]);
    }

    proptest! {
        #[test]
        fn round_robin_counts_differ_by_at_most_one_over_any_prefix(n in 1usize..8, turns in 1usize..200, mask in 1u32..255) {
            let pool = names(n);
            let eligible_set: Vec<bool> = (0..n).map(|i| mask & (1 << i) != 0).collect();
            prop_assume!(eligible_set.iter().any(|e| *e));
            let eligible = |m: &str| pool.iter().position(|p| p == m).is_some_and(|i| eligible_set[i]);
            let mut last: Option<String> = None;
            let mut counts = vec![0u32; n];
            for _ in 0..turns {
                let chosen = round_robin(&pool, &eligible, last.as_deref()).unwrap().clone();
                let i = pool.iter().position(|p| *p == chosen).unwrap();
                prop_assert!(eligible_set[i]);
                counts[i] += 1;
                last = Some(chosen);
                let eligible_counts: Vec<u32> = (0..n).filter(|i| eligible_set[*i]).map(|i| counts[i]).collect();
                let (min, max) = (eligible_counts.iter().min().unwrap(), eligible_counts.iter().max().unwrap());
                prop_assert!(max - min <= 1);
            }
        }

        #[test]
        fn percentage_counts_stay_within_one_of_the_exact_share(weights in proptest::collection::vec(1u32..100, 1..6), turns in 1u64..300) {
            let total: u32 = weights.iter().sum();
            // Normalise to percentages summing to 100.
            let pcts: Vec<f64> = weights.iter().map(|w| *w as f64 * 100.0 / total as f64).collect();
            let pool: Vec<(String, f64)> = names(pcts.len()).into_iter().zip(pcts.iter().copied()).collect();
            let mut state = RotationState::default();
            for _ in 0..turns {
                let chosen = percentage(&pool, &|_| true, &state).unwrap().clone();
                *state.counts.entry(chosen).or_default() += 1;
                state.total += 1;
                for (email, pct) in &pool {
                    let share = pct / 100.0 * state.total as f64;
                    let count = state.counts.get(email).copied().unwrap_or(0) as f64;
                    prop_assert!((count - share).abs() < 1.0 + 1e-9, "{email}: {count} vs {share}");
                }
            }
        }
    }
}
