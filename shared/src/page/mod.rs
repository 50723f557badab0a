//! Pages of a list (spec "Limits"; BEHAVIOR 2 and 11): the page asked for ([`PageRequest`]),
//! the position a page starts after, the page the store hands back ([`Page`]), and the
//! `{data, pagination}` shape every list answers with.
//!
//! A list is read either by `offset` (at most [`MAX_OFFSET`]) or after a position: the opaque,
//! tamper-evident `after` cursor of [`cursor`] wraps the sort key of the last item of the
//! previous page. Reading after a position costs O(limit) store reads whatever the list's length.

pub mod cursor;

use serde::Serialize;
use utoipa::ToSchema;

/// Default page size (spec "Limits").
pub const DEFAULT_LIMIT: usize = 10;
/// Largest page size (spec "Limits").
pub const MAX_LIMIT: usize = 100;
/// Largest `offset` (BEHAVIOR 11): deeper pages are read with `after`.
pub const MAX_OFFSET: usize = 10_000;

/// Most bytes the items of one page take as compact JSON (with the commas between them):
/// 2.5 MiB. A Lambda response is at most 6 MB (6,291,456 bytes) including the envelope, in which
/// the body is a JSON string, where each byte of the body takes at most 2 bytes (`"` and `\`
/// are escaped, the rest is copied); 2 x 2.5 MiB plus `pagination` and headers stays below it.
/// A page holds at least one item (a record is at most 300 KB, BEHAVIOR 12), so a walk always
/// advances; `docs/decisions.md` ("Size limits").
pub const MAX_PAGE_DATA_BYTES: usize = 2_621_440;

/// Where in a list an item sits: its sort key in the list's index (for records and routers
/// `<created_at>#<id>`, for members `<email>#<id>`; `store::time_then_id`, `store::email_then_id`). Positions order like the
/// list; a position stays meaningful after its item is archived or gone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position(String);

impl Position {
    /// The position of the item whose list sort key is `sort_key`.
    pub fn new(sort_key: impl Into<String>) -> Self {
        Self(sort_key.into())
    }

    /// The sort key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageStart {
    /// Skip this many items (0..=[`MAX_OFFSET`]).
    Offset(usize),
    /// The items strictly after this position.
    After(Position),
}

/// The page of a list asked for, in the contract's order (BEHAVIOR 2): its size, where it
/// starts, and whether archived items count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    /// Maximum number of items, 1..=100.
    pub limit: usize,
    /// Where the page starts.
    pub start: PageStart,
    /// Whether archived items are included.
    pub include_archived: bool,
}

impl PageRequest {
    /// The first `limit` items; archived ones too when `include_archived`.
    pub fn first(limit: usize, include_archived: bool) -> Self {
        Self {
            limit,
            start: PageStart::Offset(0),
            include_archived,
        }
    }

    /// `limit` items from `offset`.
    pub fn at_offset(limit: usize, offset: usize, include_archived: bool) -> Self {
        Self {
            limit,
            start: PageStart::Offset(offset),
            include_archived,
        }
    }

    /// `limit` items after `position`.
    pub fn after(limit: usize, position: Position, include_archived: bool) -> Self {
        Self {
            limit,
            start: PageStart::After(position),
            include_archived,
        }
    }

    /// The number of items skipped (0 for a page read after a position).
    pub fn offset(&self) -> usize {
        match self.start {
            PageStart::Offset(offset) => offset,
            PageStart::After(_) => 0,
        }
    }
}

impl Default for PageRequest {
    /// The first page of 10 active items.
    fn default() -> Self {
        Self::first(DEFAULT_LIMIT, false)
    }
}

/// One page of a list, as a store list call returns it: the page's items and, when more items
/// follow, the position of the last one (the next page starts after it).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// At most `limit` items, in list order.
    pub items: Vec<T>,
    /// `Some` exactly when at least one more item follows the page.
    pub next: Option<Position>,
}

impl<T> Page<T> {
    /// A page of `items` with `next` when more follow.
    pub fn new(items: Vec<T>, next: Option<Position>) -> Self {
        Self { items, next }
    }

    /// Cuts `items` read with one extra item (`limit + 1`) to the page: `next` is the position
    /// of the page's last item when the extra one was there. `position` gives an item's
    /// position.
    pub fn from_lookahead(
        mut items: Vec<T>, limit: usize, position: impl Fn(&T) -> Position,
    ) -> Self {
        let more = items.len() > limit;
        items.truncate(limit);
        let next = if more {
            items.last().map(position)
        } else {
            None
        };
        Self { items, next }
    }
}

impl<T> Page<T> {
    /// The page's items as `view`s, cut to the longest prefix whose JSON takes at most
    /// [`MAX_PAGE_DATA_BYTES`] (at least one item); when cut, `next` is the position (per
    /// `position`) of the last item kept, so the client continues with `after` from there
    /// (its `pagination.count` is below `limit`).
    pub fn into_views<V: serde::Serialize>(
        self, view: impl Fn(&T) -> V, position: impl Fn(&T) -> Position,
    ) -> Page<V> {
        let mut views = Vec::with_capacity(self.items.len());
        let mut bytes = 0usize;
        for item in &self.items {
            let v = view(item);
            // One comma between items.
            bytes += crate::types::limits::json_size(&v) + usize::from(!views.is_empty());
            if bytes > MAX_PAGE_DATA_BYTES && !views.is_empty() {
                let last = &self.items[views.len() - 1];
                return Page::new(views, Some(position(last)));
            }
            views.push(v);
        }
        Page::new(views, self.next)
    }
}

/// The `pagination` object of a list answer (BEHAVIOR 11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Pagination {
    /// The page size asked for (default 10, 1..=100).
    #[schema(minimum = 1, maximum = 100, example = 10)]
    pub limit: usize,
    /// The number of items skipped (0 for a page read with `after`).
    #[schema(minimum = 0, maximum = 10000, example = 0)]
    pub offset: usize,
    /// The number of items in this page (not a total).
    #[schema(minimum = 0, maximum = 100, example = 2)]
    pub count: usize,
    /// The cursor of the next page (pass it as `after`, with the same `archived` filter), or
    /// `null` when this page is the last.
    #[schema(example = "MjAyNi0xMS0yM1QwOTozMDowMC4wMDAwMDAwMDBaIzAxOTM.GJ2mU1l1e0S0G6pMQkOz4A")]
    pub next_after: Option<String>,
}

/// A list answer: `{data: [...], pagination: {limit, offset, count, next_after}}`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ListView<T> {
    /// The items of this page, in the list's order.
    pub data: Vec<T>,
    /// Where this page is.
    pub pagination: Pagination,
}

impl<T> ListView<T> {
    /// The answer for `page` holding `data`, with the cursor `next_after` of the next page.
    pub fn new(data: Vec<T>, page: &PageRequest, next_after: Option<String>) -> Self {
        let pagination = Pagination {
            limit: page.limit,
            offset: page.offset(),
            count: data.len(),
            next_after,
        };
        Self { data, pagination }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookahead_read_sets_next_only_when_an_item_follows() {
        let pos = |n: &u32| Position::new(n.to_string());
        let full = Page::from_lookahead(vec![1, 2, 3], 2, pos);
        assert_eq!(full.items, [1, 2]);
        assert_eq!(full.next, Some(Position::new("2")));
        let last = Page::from_lookahead(vec![1, 2], 2, pos);
        assert_eq!(last.items, [1, 2]);
        assert_eq!(last.next, None);
        let empty = Page::from_lookahead(Vec::new(), 2, pos);
        assert_eq!(empty.next, None);
    }

    #[test]
    fn a_page_is_cut_where_its_items_outgrow_the_byte_budget_and_continues_after_the_last_kept() {
        let pos = |n: &usize| Position::new(n.to_string());
        // Items of a third of the budget each (as JSON strings with their quotes).
        let third = MAX_PAGE_DATA_BYTES / 3 - 2;
        let big = |_: &usize| "x".repeat(third);
        let cut = Page::new(vec![1, 2, 3, 4, 5], None).into_views(big, pos);
        assert_eq!(cut.items.len(), 2);
        assert_eq!(cut.next, Some(Position::new("2")));
        // What fits stays as it was, with its own next.
        let small = Page::new(vec![1, 2], Some(Position::new("2"))).into_views(big, pos);
        assert_eq!(
            (small.items.len(), small.next),
            (2, Some(Position::new("2")))
        );
        // One item larger than the budget is still a page of one.
        let huge = |_: &usize| "x".repeat(MAX_PAGE_DATA_BYTES + 1);
        let one = Page::new(vec![1, 2], None).into_views(huge, pos);
        assert_eq!((one.items.len(), one.next), (1, Some(Position::new("1"))));
        let last = Page::new(vec![1], None).into_views(huge, pos);
        assert_eq!((last.items.len(), last.next), (1, None));
    }

    #[test]
    fn a_page_after_a_position_reports_offset_zero() {
        let page = PageRequest::after(5, Position::new("x"), false);
        let view = ListView::new(vec![1], &page, None);
        assert_eq!(view.pagination.offset, 0);
        assert_eq!(view.pagination.limit, 5);
        assert_eq!(view.pagination.count, 1);
        assert_eq!(
            ListView::new(vec![1], &PageRequest::at_offset(5, 7, true), None)
                .pagination
                .offset,
            7
        );
    }
}
