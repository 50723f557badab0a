//! The accounts' contract ([`shared::store::AccountStore`]): accounts, clients, roles, teams and
//! field definitions.

use super::*;

shared::on_both_stores!(
    threads = 2; store:
    roles_and_teams_are_listed_per_account,
    field_definitions_read_back_in_definition_order_per_account,
    accounts_and_clients_read_back_by_id,
);

async fn roles_and_teams_are_listed_per_account(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let roles = vec![
        Role {
            id: new_id(),
            account_id: acc.id,
            name: "Sales Rep".into(),
        },
        Role {
            id: new_id(),
            account_id: acc.id,
            name: "Manager".into(),
        },
    ];
    let team = |name: &str, ms: i64| Team {
        id: new_id(),
        account_id: acc.id,
        name: name.into(),
        members: vec![
            Email::parse("a@x.co").unwrap(),
            Email::parse("b@x.co").unwrap(),
        ],
        created_at: at(ms),
    };
    let teams = vec![team("Zeta", 1), team("Alpha", 2)];
    plan.roles = roles.clone();
    plan.teams = teams.clone();
    provision(&store, vec![plan, plan_of(&account(None))]).await;

    let mut listed = store.list_roles(acc.id).await.unwrap();
    listed.sort_by_key(|r| r.id);
    let mut expected = roles;
    expected.sort_by_key(|r| r.id);
    assert_eq!(listed, expected);
    assert_eq!(store.list_teams(acc.id).await.unwrap(), teams);
    assert!(store.list_roles(new_id()).await.unwrap().is_empty());
    assert!(store.list_teams(new_id()).await.unwrap().is_empty());
}

pub(super) fn definition(object_type: ObjectType, name: &str, options: &[&str]) -> FieldDefinition {
    FieldDefinition {
        object_type,
        internal_name: name.into(),
        name: format!("Display {name}"),
        field_type: if options.is_empty() {
            FieldType::String
        } else {
            FieldType::Enumeration
        },
        options: options
            .iter()
            .map(|o| EnumOption {
                internal_name: o.to_string(),
                name: o.to_uppercase(),
            })
            .collect(),
    }
}

async fn field_definitions_read_back_in_definition_order_per_account(store: Arc<dyn Store>) {
    let acc = account(None);
    let mut plan = plan_of(&acc);
    let defs = vec![
        definition(ObjectType::Contacts, "zone", &[]),
        definition(
            ObjectType::Contacts,
            "lifecycle_stage",
            &["zombie", "angel"],
        ),
        definition(ObjectType::Deals, "area", &[]),
        definition(ObjectType::Contacts, "alpha", &[]),
    ];
    plan.field_definitions = defs.clone();
    provision(&store, vec![plan]).await;
    let mut more = plan_of(&acc);
    let later = definition(ObjectType::Contacts, "aardvark", &[]);
    more.field_definitions = vec![defs[0].clone(), later.clone()];
    provision(&store, vec![more]).await;

    let mut expected = defs;
    expected.push(later);
    assert_eq!(store.field_definitions(acc.id).await.unwrap(), expected);
    assert!(store.field_definitions(new_id()).await.unwrap().is_empty());
}

async fn accounts_and_clients_read_back_by_id(store: Arc<dyn Store>) {
    let mut acc = account(Some(100));
    acc.crm = Some(shared::model::CrmConnection {
        provider: shared::model::account::CrmProvider::HubSpot,
        base_url: "http://127.0.0.1:9/crm".into(),
        credentials: shared::model::account::SealedCrmCredentials::PrivateApp {
            access_token: shared::model::account::SealedSecret::new("local:c2VhbGVk"),
        },
        options: Default::default(),
    });
    let mut plan = plan_of(&acc);
    let client = ApiClient {
        client_id: "acme-integration".into(),
        account_id: acc.id,
        secret_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
        scopes: vec![Scope::Read, Scope::Update],
        disabled: false,
        generation: 0,
    };
    plan.clients = vec![client.clone()];
    let inactive = Account {
        active: false,
        assignment_quota: None,
        ..account(None)
    };
    // An OAuth app's connection with id properties (BEHAVIOR 7) reads back as stored.
    let mut oauth = account(None);
    oauth.crm = Some(shared::model::CrmConnection {
        provider: shared::model::account::CrmProvider::HubSpot,
        base_url: "http://127.0.0.1:9/crm".into(),
        credentials: shared::model::account::SealedCrmCredentials::OAuth {
            oauth: shared::model::account::SealedOAuthApp {
                client_id: "routing-app".into(),
                client_secret: shared::model::account::SealedSecret::new("local:c2VjcmV0"),
                refresh_token: Some(shared::model::account::SealedSecret::new(
                    "local:cmVmcmVzaA==",
                )),
            },
        },
        options: shared::model::account::CrmOptions {
            id_properties: shared::model::account::IdProperties::new([(
                shared::model::ObjectType::Contacts,
                "email".to_string(),
            )]),
            max_requests_per_second: Some(4),
            ..Default::default()
        },
    });
    // A Salesforce connection (client credentials: no refresh token) with its options.
    let mut salesforce = account(None);
    salesforce.crm = Some(shared::model::CrmConnection {
        provider: shared::model::account::CrmProvider::Salesforce,
        base_url: "https://acme.my.salesforce.com".into(),
        credentials: shared::model::account::SealedCrmCredentials::OAuth {
            oauth: shared::model::account::SealedOAuthApp {
                client_id: "3MVG9-consumer-key".into(),
                client_secret: shared::model::account::SealedSecret::new("local:c2VjcmV0"),
                refresh_token: None,
            },
        },
        options: shared::model::account::CrmOptions {
            api_version: Some("61.0".into()),
            contacts_object: Some("Lead".into()),
            max_api_share: Some(0.75),
            ..Default::default()
        },
    });
    provision(
        &store,
        vec![
            plan,
            plan_of(&inactive),
            plan_of(&oauth),
            plan_of(&salesforce),
        ],
    )
    .await;
    assert_eq!(
        store.get_account(salesforce.id).await.unwrap(),
        Some(salesforce)
    );
    assert_eq!(store.get_account(oauth.id).await.unwrap(), Some(oauth));
    assert_eq!(store.get_account(acc.id).await.unwrap(), Some(acc));
    assert_eq!(
        store.get_account(inactive.id).await.unwrap(),
        Some(inactive)
    );
    assert_eq!(store.get_account(new_id()).await.unwrap(), None);
    assert_eq!(
        store.get_client("acme-integration").await.unwrap(),
        Some(client)
    );
    assert_eq!(store.get_client("nobody").await.unwrap(), None);
}
