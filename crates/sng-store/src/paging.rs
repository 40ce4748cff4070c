//! Keyset pagination shared by the listings ordered by a sequence number (audit trail, events,
//! quarantined plans): fetch one row more than the page to know whether more remain.

use crate::{Result, StoreError};

/// Rows to fetch for a page of `limit` (at least 1): one more than the page.
pub(crate) fn fetch_for(limit: usize) -> Result<i64> {
    if limit == 0 {
        return Err(StoreError::Invalid("limit must be at least 1".into()));
    }
    Ok(i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1))
}

/// Cut the rows fetched (each with its sequence number) to one page, and the sequence number of
/// its last row when more remain: the `before` of the next page.
pub(crate) fn cut<T>(mut rows: Vec<(i64, T)>, limit: usize) -> (Vec<(i64, T)>, Option<i64>) {
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = more.then(|| rows.last().map(|(seq, _)| *seq)).flatten();
    (rows, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_says_where_the_next_starts_only_when_more_remain() {
        assert!(fetch_for(0).is_err());
        assert_eq!(fetch_for(2).unwrap(), 3);
        assert_eq!(fetch_for(usize::MAX).unwrap(), i64::MAX);
        let rows = vec![(9, 'a'), (7, 'b'), (4, 'c')];
        assert_eq!(cut(rows.clone(), 2), (vec![(9, 'a'), (7, 'b')], Some(7)));
        assert_eq!(cut(rows.clone(), 3), (rows, None));
    }
}
