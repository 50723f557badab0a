//! Replacing a provisioned API client ([`shared::store::ProvisionStore::replace_client`],
//! BEHAVIOR 1): conditional on the generation read, so two provisioning runs
//! never both apply a change; an absent client is never created by it; a client stored without
//! a generation (before generations existed) is at 0.

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    a_client_is_replaced_only_at_the_generation_read,
);

async fn a_client_is_replaced_only_at_the_generation_read(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let client = ApiClient {
        client_id: format!("client-{}", acc.id),
        account_id: acc.id,
        secret_hash: "old-hash".into(),
        scopes: vec![Scope::Read],
        disabled: false,
        generation: 0,
    };
    plan.clients = vec![client.clone()];
    provision(&store, vec![plan]).await;

    let rekeyed = ApiClient {
        secret_hash: "new-hash".into(),
        generation: 1,
        ..client.clone()
    };
    assert!(store.replace_client(&rekeyed, 0).await.unwrap());
    assert_eq!(
        store.get_client(&client.client_id).await.unwrap(),
        Some(rekeyed.clone())
    );
    // A run that read generation 0 too comes late: nothing is written.
    let late = ApiClient {
        disabled: true,
        generation: 1,
        ..client.clone()
    };
    assert!(!store.replace_client(&late, 0).await.unwrap());
    assert_eq!(
        store.get_client(&client.client_id).await.unwrap(),
        Some(rekeyed.clone())
    );
    let disabled = ApiClient {
        disabled: true,
        generation: 2,
        ..rekeyed.clone()
    };
    assert!(store.replace_client(&disabled, 1).await.unwrap());
    assert_eq!(
        store.get_client(&client.client_id).await.unwrap(),
        Some(disabled)
    );
    // Never an insert.
    let absent = ApiClient {
        client_id: "never-provisioned".into(),
        ..client
    };
    assert!(!store.replace_client(&absent, 0).await.unwrap());
    assert_eq!(store.get_client("never-provisioned").await.unwrap(), None);
}
