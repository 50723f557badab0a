//! Provisioning loader. STUB: being written.

/// A validated provisioning plan.
#[derive(Debug, Clone, Default)]
pub struct ProvisionPlan {}
