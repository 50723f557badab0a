//! Member capacity (BEHAVIOR 6 step 12): whether a member can take another record of a type,
//! and the member after counting one.

use crate::model::member::Member;
use crate::model::object_type::ObjectType;
use chrono::{DateTime, Utc};

/// `current_capacity < max_capacity` for every entry that applies to `object_type`.
pub fn under_capacity(member: &Member, object_type: ObjectType) -> bool {
    member
        .capacity
        .iter()
        .filter(|e| e.applies_to(object_type))
        .all(|e| e.has_room())
}

/// The member with `current_capacity` + 1 on each applying entry, and the version read; `None`
/// when no entry applies (nothing to write).
pub fn count_assignment(
    member: &Member, object_type: ObjectType, now: DateTime<Utc>,
) -> Option<(Member, u64)> {
    if !member.capacity.iter().any(|e| e.applies_to(object_type)) {
        return None;
    }
    let mut next = member.clone();
    for entry in next.capacity.iter_mut() {
        if entry.applies_to(object_type) {
            *entry = entry.counted();
        }
    }
    next.updated_at = now.max(member.updated_at);
    next.version = member.version + 1;
    Some((next, member.version))
}
