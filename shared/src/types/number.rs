//! The range of numbers the API stores (BEHAVIOR 12): what DynamoDB's number type holds, so
//! both stores accept exactly the same numbers.

/// Smallest magnitude of a non-zero number: DynamoDB's `1E-130`.
pub const MIN_MAGNITUDE: f64 = 1e-130;

/// Every magnitude stays below this: DynamoDB's largest is `9.99...9E+125` (38 nines).
pub const MAGNITUDE_BOUND: f64 = 1e126;

/// Whether `x` is finite and zero or of a magnitude from [`MIN_MAGNITUDE`] to below
/// [`MAGNITUDE_BOUND`]. An `f64` never carries more than 17 significant digits, within
/// DynamoDB's 38.
pub fn is_storable(x: f64) -> bool {
    x.is_finite() && (x == 0.0 || (MIN_MAGNITUDE..MAGNITUDE_BOUND).contains(&x.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finite_numbers_in_dynamodbs_range_are_storable() {
        for x in [0.0, -0.0, 1.0, -2.5, 1e-130, 9.9e125, -9.9e125, 1e125] {
            assert!(is_storable(x), "{x}");
        }
        for x in [f64::NAN, f64::INFINITY, 1e126, -1e200, 1e-131, 5e-324] {
            assert!(!is_storable(x), "{x}");
        }
    }
}
