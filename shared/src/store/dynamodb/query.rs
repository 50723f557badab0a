//! Key conditions of `Query` requests: a partition of the table or an index, a condition on the
//! sort key, the order.

use super::items::{s, Expr};
use crate::store::dynamodb::keys;
use crate::store::{size, PageRequest, PageStart};

/// A key condition: the partition of the table or an index, optionally a condition on the
/// sort key, read in ascending or descending order.
pub(super) struct Query {
    pub(super) index: Option<&'static str>,
    pub(super) pk: String,
    pub(super) sk: SortCondition,
    pub(super) descending: bool,
}

/// The sort-key part of a key condition.
pub(super) enum SortCondition {
    /// The whole partition.
    Any,
    /// `begins_with(SK, prefix)`.
    Prefix(String),
    /// `SK > after`.
    After(String),
    /// `SK < before`.
    Before(String),
    /// `SK BETWEEN low AND high` (both included).
    Between(String, String),
}

impl Query {
    /// The whole partition `pk` of the table, ascending.
    pub(super) fn table(pk: String) -> Self {
        Self {
            index: None,
            pk,
            sk: SortCondition::Any,
            descending: false,
        }
    }

    /// The whole partition `pk` of the index `index`, ascending.
    pub(super) fn index(index: &'static str, pk: String) -> Self {
        Self {
            index: Some(index),
            ..Self::table(pk)
        }
    }

    /// The listing `page` asks for: the index of its filter, after its position if any.
    pub(super) fn listing(pk: String, page: &PageRequest) -> Self {
        let index = if page.include_archived {
            keys::GSI2
        } else {
            keys::GSI1
        };
        let mut q = Self::index(index, pk);
        if let PageStart::After(position) = &page.start {
            q.sk = SortCondition::After(position.as_str().to_string());
        }
        q
    }

    /// Only the sort keys that begin with `prefix`.
    pub(super) fn prefix(mut self, prefix: String) -> Self {
        self.sk = SortCondition::Prefix(prefix);
        self
    }

    /// Read in descending sort-key order.
    pub(super) fn newest_first(mut self) -> Self {
        self.descending = true;
        self
    }

    /// Whether no item can match: the partition value, or a sort-key prefix, is longer than a
    /// key can be ([`size`]): such a query is answered empty without being sent (DynamoDB would
    /// refuse it with a `ValidationException`). Comparisons (`After`, `Before`, `Between`)
    /// compare with positions the service issued, keys that exist.
    pub(super) fn matches_nothing(&self) -> bool {
        !size::partition_key_fits(&self.pk)
            || matches!(&self.sk, SortCondition::Prefix(p) if !size::sort_key_fits(p))
    }

    /// The key condition expression, its names and values.
    pub(super) fn expr(&self) -> Expr {
        let (pk, sk) = match self.index {
            None => (keys::PK, keys::SK),
            Some(keys::GSI1) => (keys::GSI1PK, keys::GSI1SK),
            Some(_) => (keys::GSI2PK, keys::GSI2SK),
        };
        let e = Expr::new("#pk = :pk")
            .name("#pk", pk)
            .value(":pk", s(&self.pk));
        let with = |text: &str, e: Expr| {
            Expr {
                text: format!("#pk = :pk AND {text}"),
                ..e
            }
            .name("#sk", sk)
        };
        match &self.sk {
            SortCondition::Any => e,
            SortCondition::Prefix(prefix) => {
                with("begins_with(#sk, :prefix)", e).value(":prefix", s(prefix))
            }
            SortCondition::After(after) => with("#sk > :after", e).value(":after", s(after)),
            SortCondition::Before(before) => with("#sk < :before", e).value(":before", s(before)),
            SortCondition::Between(low, high) => with("#sk BETWEEN :low AND :high", e)
                .value(":low", s(low))
                .value(":high", s(high)),
        }
    }
}
