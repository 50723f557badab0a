//! Pages of a list (spec "Limits"; BEHAVIOR 2): the page asked for and the `{data, pagination}`
//! shape every list answers with.

use serde::Serialize;
use utoipa::ToSchema;

/// Default page size (spec "Limits").
pub const DEFAULT_LIMIT: usize = 10;
/// Largest page size (spec "Limits").
pub const MAX_LIMIT: usize = 100;
/// Largest `offset` (BEHAVIOR 2 sets only a minimum; a bound keeps the parameter's range the
/// same on every platform).
pub const MAX_OFFSET: usize = 1_000_000_000;

/// One page of a list, in the contract's order (BEHAVIOR 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Maximum number of items, 1..=100.
    pub limit: usize,
    /// Items to skip, >= 0.
    pub offset: usize,
    /// Whether archived items are included.
    pub include_archived: bool,
}

impl Default for Page {
    /// The first page of 10 active items.
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIMIT,
            offset: 0,
            include_archived: false,
        }
    }
}

/// The `pagination` object of a list answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Pagination {
    /// The page size asked for (default 10, 1..=100).
    #[schema(minimum = 1, maximum = 100, example = 10)]
    pub limit: usize,
    /// The number of items skipped.
    #[schema(minimum = 0, example = 0)]
    pub offset: usize,
    /// The number of items in this page (not a total).
    #[schema(minimum = 0, maximum = 100, example = 2)]
    pub count: usize,
}

/// A list answer: `{data: [...], pagination: {limit, offset, count}}`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ListView<T> {
    /// The items of this page, in the list's order.
    pub data: Vec<T>,
    /// Where this page is.
    pub pagination: Pagination,
}

impl<T> ListView<T> {
    /// The answer for `page` holding `data`.
    pub fn new(data: Vec<T>, page: Page) -> Self {
        let pagination = Pagination {
            limit: page.limit,
            offset: page.offset,
            count: data.len(),
        };
        Self { data, pagination }
    }
}
