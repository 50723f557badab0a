//! `template.yaml` checked against the code and the contract: references, the table against
//! `infra/table.json`, every route of the spec on its function, the dispatch queue, functions,
//! and least-privilege roles. cfn-lint and `sam validate --lint` run in
//! `infra/scripts/check-template.sh`; these are the checks they do not make.
#![allow(clippy::unwrap_used)] // a test crate: a failed unwrap is a failed test

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use template_check::{
    actions_of_call, api_routes, broken_references, function_environment, function_property,
    function_roles, functions, one_or_many, parse_template, read_repo_file, recorded_calls,
    resolve_route, role_actions, role_permission_problems, role_statements, Permission,
};

fn template() -> Value {
    parse_template(&read_repo_file("template.yaml")).expect("template.yaml parses")
}

/// (logical id, cargo `[[bin]]` name, crate directory, role)
const FUNCTIONS: &[(&str, &str, &str, &str)] = &[
    ("TokenFunction", "token", "functions/token", "TokenRole"),
    (
        "RecordsFunction",
        "records",
        "functions/records",
        "RecordsRole",
    ),
    ("UsersFunction", "users", "functions/users", "UsersRole"),
    (
        "RoutersFunction",
        "routers",
        "functions/routers",
        "RoutersRole",
    ),
    (
        "DispatchFunction",
        "dispatch",
        "functions/dispatch",
        "DispatchRole",
    ),
    (
        "WebhooksFunction",
        "webhooks",
        "functions/webhooks",
        "WebhooksRole",
    ),
];

#[test]
fn every_ref_getatt_and_sub_name_exists() {
    let problems = broken_references(&template());
    assert!(
        problems.is_empty(),
        "broken references:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_transform_and_the_architecture_parameter_are_as_designed() {
    let t = template();
    assert_eq!(t["Transform"], "AWS::Serverless-2016-10-31");
    assert_eq!(t["Parameters"]["Architecture"]["Default"], "arm64");
    assert_eq!(
        t["Parameters"]["Architecture"]["AllowedValues"],
        json!(["arm64", "x86_64"])
    );
    for name in [
        "Stage",
        "NamePrefix",
        "JwtPublicJwks",
        "JwtIssuer",
        "JwtAudience",
    ] {
        assert!(t["Parameters"][name].is_object(), "parameter {name}");
    }
    assert_eq!(
        t["Parameters"]["JwtPublicJwks"]["Type"], "String",
        "the JWKS is public: a plain String, not a secure parameter"
    );
}

// ------------------------------------------------------------------------------------------------
// The table: one source of truth, infra/table.json.
// ------------------------------------------------------------------------------------------------

/// Order-insensitive form of a list of objects, sorted by `key`.
fn sorted_by(list: &Value, key: &str) -> Value {
    let mut items = list.as_array().cloned().unwrap_or_default();
    items.sort_by_key(|item| item[key].as_str().unwrap_or_default().to_string());
    Value::Array(items)
}

/// The comparable form of a table property (CloudFormation ignores the order of attribute
/// definitions and of indexes; key schemas keep theirs).
fn normalized(property: &str, value: &Value) -> Value {
    match property {
        "AttributeDefinitions" => sorted_by(value, "AttributeName"),
        "GlobalSecondaryIndexes" | "LocalSecondaryIndexes" => sorted_by(value, "IndexName"),
        _ => value.clone(),
    }
}

#[test]
fn the_table_resource_matches_infra_table_json_exactly() {
    let t = template();
    let definition: Value =
        serde_json::from_str(&read_repo_file("infra/table.json")).expect("infra/table.json");
    let tables: Vec<_> = t["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::DynamoDB::Table")
        .collect();
    assert_eq!(tables.len(), 1, "a single table");
    let (name, table) = tables[0];
    let props = &table["Properties"];

    // Every setting of the definition file is in the template, with the same value...
    for (property, expected) in definition.as_object().expect("an object") {
        assert_eq!(
            normalized(property, &props[property]),
            normalized(property, expected),
            "{name}.{property} differs from infra/table.json"
        );
    }
    // ...and the template defines no key, attribute or index the file does not.
    for property in [
        "AttributeDefinitions",
        "KeySchema",
        "GlobalSecondaryIndexes",
        "LocalSecondaryIndexes",
        "BillingMode",
    ] {
        if !props[property].is_null() {
            assert!(
                definition.get(property).is_some(),
                "{name}.{property} is not in infra/table.json"
            );
        }
    }
    assert!(
        definition.get("KeySchema").is_some() && definition.get("GlobalSecondaryIndexes").is_some()
    );
}

#[test]
fn the_table_is_protected_encrypted_and_recoverable() {
    let t = template();
    let table = &t["Resources"]["Table"];
    assert_eq!(table["Type"], "AWS::DynamoDB::Table");
    assert_eq!(table["DeletionPolicy"], "Retain");
    assert_eq!(table["UpdateReplacePolicy"], "Retain");
    let props = &table["Properties"];
    assert_eq!(props["BillingMode"], "PAY_PER_REQUEST");
    assert_eq!(
        props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"],
        true
    );
    assert_eq!(props["SSESpecification"]["SSEEnabled"], true);
    assert_eq!(props["DeletionProtectionEnabled"], true);
    assert!(
        props["TableName"].is_null(),
        "a generated name: a retained table never blocks a redeploy"
    );
}

// ------------------------------------------------------------------------------------------------
// Routes: every route of the spec on the right function, the rest where BEHAVIOR 2 wants it.
// ------------------------------------------------------------------------------------------------

/// (method, request path, function) for every route and method of the spec: each must be an
/// explicit route (not only reached through `ANY`).
const SPEC_ROUTES: &[(&str, &str, &str)] = &[
    ("POST", "/oauth2/token", "TokenFunction"),
    ("GET", "/contacts", "RecordsFunction"),
    ("POST", "/contacts", "RecordsFunction"),
    ("GET", "/contacts/{contactId}", "RecordsFunction"),
    ("PATCH", "/contacts/{contactId}", "RecordsFunction"),
    ("DELETE", "/contacts/{contactId}", "RecordsFunction"),
    ("GET", "/companies", "RecordsFunction"),
    ("POST", "/companies", "RecordsFunction"),
    ("GET", "/companies/{companyId}", "RecordsFunction"),
    ("PATCH", "/companies/{companyId}", "RecordsFunction"),
    ("DELETE", "/companies/{companyId}", "RecordsFunction"),
    ("GET", "/deals", "RecordsFunction"),
    ("POST", "/deals", "RecordsFunction"),
    ("GET", "/deals/{dealId}", "RecordsFunction"),
    ("PATCH", "/deals/{dealId}", "RecordsFunction"),
    ("DELETE", "/deals/{dealId}", "RecordsFunction"),
    ("GET", "/tickets", "RecordsFunction"),
    ("POST", "/tickets", "RecordsFunction"),
    ("GET", "/tickets/{ticketId}", "RecordsFunction"),
    ("PATCH", "/tickets/{ticketId}", "RecordsFunction"),
    ("DELETE", "/tickets/{ticketId}", "RecordsFunction"),
    ("GET", "/users", "UsersFunction"),
    ("GET", "/users/{userId}", "UsersFunction"),
    ("PATCH", "/users/{userId}", "UsersFunction"),
    ("GET", "/routers", "RoutersFunction"),
    ("GET", "/routers/{routerId}", "RoutersFunction"),
    ("POST", "/dispatch/router", "DispatchFunction"),
];

/// Requests outside the spec's routes and the function that must answer them (BEHAVIOR 2: 400
/// for item methods on a collection or an empty id, 405 for other methods on a known path, 404
/// with the contract's body everywhere else, from the records function through `$default`).
const OTHER_REQUESTS: &[(&str, &str, &str)] = &[
    ("PATCH", "/contacts", "RecordsFunction"),
    ("DELETE", "/deals", "RecordsFunction"),
    ("GET", "/tickets/", "RecordsFunction"),
    (
        "PUT",
        "/companies/01936b2a-7c00-7a00-8000-000000000001",
        "RecordsFunction",
    ),
    ("PATCH", "/users", "UsersFunction"),
    ("GET", "/users/", "UsersFunction"),
    (
        "DELETE",
        "/users/1d7e8f90-a1b2-4c3d-8e4f-5a6b7c8d9e01",
        "UsersFunction",
    ),
    ("POST", "/routers", "RoutersFunction"),
    ("GET", "/routers/", "RoutersFunction"),
    (
        "PATCH",
        "/routers/5b1c2d34-e5f6-4a71-8c83-9e0f1a2b3c45",
        "RoutersFunction",
    ),
    ("GET", "/oauth2/token", "TokenFunction"),
    ("GET", "/dispatch/router", "DispatchFunction"),
    ("GET", "/", "RecordsFunction"),
    ("GET", "/nothing-here", "RecordsFunction"),
    ("GET", "/contacts/x/y", "RecordsFunction"),
    ("POST", "/dispatch", "RecordsFunction"),
    ("GET", "/oauth2", "RecordsFunction"),
];

/// A concrete path for a route path: `{name}` becomes a sample id.
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| {
            if s.starts_with('{') {
                "01936b2a-7c00-7a00-8000-000000000002"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The function that serves an operation of an OpenAPI tag at `path`. The routing history
/// (BEHAVIOR 8) is served where its subject lives: a router's by the routers function, a
/// record's by the records function. The change log (BEHAVIOR 18) is served by the routers
/// function, with the routers' read permissions.
fn function_of_tag(tag: &str, path: &str) -> &'static str {
    match tag {
        "Token" | "API description" => "TokenFunction",
        "Records" => "RecordsFunction",
        "Users" => "UsersFunction",
        "Routers" => "RoutersFunction",
        "Dispatch" => "DispatchFunction",
        "Webhooks" => "WebhooksFunction",
        "Audit" => "RoutersFunction",
        "Routing history" if path.starts_with("/routers/") => "RoutersFunction",
        "Routing history" => "RecordsFunction",
        other => panic!("no function serves the tag {other}"),
    }
}

/// (method, path, function) of every operation of the committed API description
/// (`openapi.json`, generated from the code and kept equal to it by a test).
fn described_routes() -> Vec<(String, String, &'static str)> {
    let doc: Value = serde_json::from_str(&read_repo_file("openapi.json")).expect("openapi.json");
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            let tag = op["tags"][0].as_str().expect("a tag");
            routes.push((
                method.to_uppercase(),
                path.clone(),
                function_of_tag(tag, path),
            ));
        }
    }
    routes
}

/// The methods the spec defines on an item path, sent to its collection: BEHAVIOR 2's 400
/// `Missing path parameter`, answered by the function, and no operation of the document.
const ITEM_METHODS_ON_COLLECTIONS: &[(&str, &str, &str)] = &[
    ("PATCH", "/contacts", "RecordsFunction"),
    ("DELETE", "/contacts", "RecordsFunction"),
    ("PATCH", "/companies", "RecordsFunction"),
    ("DELETE", "/companies", "RecordsFunction"),
    ("PATCH", "/deals", "RecordsFunction"),
    ("DELETE", "/deals", "RecordsFunction"),
    ("PATCH", "/tickets", "RecordsFunction"),
    ("DELETE", "/tickets", "RecordsFunction"),
    ("PATCH", "/users", "UsersFunction"),
];

#[test]
fn an_item_method_sent_to_its_collection_reaches_its_function_through_the_paths_any_route() {
    let routes = api_routes(&template());
    let described = described_routes();
    for (method, path, function) in ITEM_METHODS_ON_COLLECTIONS {
        assert!(
            !described.iter().any(|(m, p, _)| m == method && p == path),
            "{method} {path} is an operation of openapi.json"
        );
        let resolved = resolve_route(&routes, method, path).expect("resolves");
        assert_eq!(resolved.method, "ANY", "{method} {path}");
        assert_eq!(resolved.function, *function, "{method} {path}");
    }
}

#[test]
fn every_route_of_the_spec_is_described() {
    let described = described_routes();
    for (method, path, function) in SPEC_ROUTES {
        assert!(
            described
                .iter()
                .any(|(m, p, f)| m == method && p == path && f == function),
            "{method} {path} ({function}) is not in openapi.json"
        );
    }
}

#[test]
fn every_described_operation_is_an_explicit_route_on_its_function() {
    let routes = api_routes(&template());
    for (method, path, function) in &described_routes() {
        let (method, path, function) = (method.as_str(), path.as_str(), *function);
        let explicit: Vec<_> = routes
            .iter()
            .filter(|r| r.method == *method && r.path == *path)
            .collect();
        assert_eq!(explicit.len(), 1, "{method} {path}: one explicit route");
        assert_eq!(explicit[0].function, function, "{method} {path}");
        let resolved = resolve_route(&routes, method, &concrete(path)).expect("resolves");
        assert_eq!(
            resolved, explicit[0],
            "{method} {path} resolves to its explicit route"
        );
    }
}

#[test]
fn every_other_request_reaches_the_function_that_answers_it_in_the_contract_shape() {
    let routes = api_routes(&template());
    for (method, path, function) in OTHER_REQUESTS {
        let resolved = resolve_route(&routes, method, path).expect("resolves");
        assert_eq!(
            resolved.function,
            *function,
            "{method} {path} (route {})",
            resolved.key()
        );
    }
}

#[test]
fn the_api_has_exactly_the_described_routes_their_any_fallbacks_and_a_default_route() {
    let routes = api_routes(&template());
    let described = described_routes();
    let spec_paths: BTreeSet<&str> = described.iter().map(|(_, p, _)| p.as_str()).collect();
    let mut keys = BTreeSet::new();
    for route in &routes {
        assert!(keys.insert(route.key()), "duplicate route {}", route.key());
        assert!(
            !route.path.ends_with('/'),
            "{}: a route key cannot end with /",
            route.key()
        );
        if route.path == "$default" {
            assert_eq!(
                route.function, "RecordsFunction",
                "$default answers 404 from records"
            );
            continue;
        }
        assert!(
            spec_paths.contains(route.path.as_str()),
            "{} is not a described path",
            route.key()
        );
        if route.method != "ANY" {
            assert!(
                described
                    .iter()
                    .any(|(m, p, _)| *m == route.method && *p == route.path),
                "{} is not a described operation",
                route.key()
            );
        }
    }
    for path in &spec_paths {
        assert!(
            keys.contains(&format!("ANY {path}")),
            "ANY {path}: 405/400 from the function"
        );
    }
    assert!(keys.contains("$default"));
}

#[test]
fn every_api_event_uses_the_http_api_with_payload_format_2() {
    let t = template();
    for (name, function) in functions(&t) {
        for (event, spec) in function["Properties"]["Events"].as_object().unwrap() {
            match spec["Type"].as_str() {
                Some("HttpApi") => {
                    assert_eq!(
                        spec["Properties"]["ApiId"],
                        json!({"Ref": "HttpApi"}),
                        "{name}.{event}"
                    );
                    assert_eq!(
                        spec["Properties"]["PayloadFormatVersion"], "2.0",
                        "{name}.{event}"
                    );
                }
                Some("SQS") => {
                    let queue = match name.as_str() {
                        "DispatchFunction" => "DispatchQueue",
                        "WebhooksFunction" => "WebhookQueue",
                        other => panic!("{other} reads no queue"),
                    };
                    assert_eq!(
                        spec["Properties"]["Queue"],
                        json!({"Fn::GetAtt": [queue, "Arn"]}),
                        "{name}.{event}: each function reads its own queue"
                    );
                    assert_eq!(
                        spec["Properties"]["FunctionResponseTypes"],
                        json!(["ReportBatchItemFailures"]),
                        "{name}.{event}"
                    );
                }
                Some("Schedule") => {
                    assert_eq!(name, "DispatchFunction", "only dispatch sweeps due work");
                    assert_eq!(spec["Properties"]["Schedule"], "rate(1 minute)");
                }
                other => panic!("{name}.{event}: unexpected event type {other:?}"),
            }
        }
    }
    let api = &t["Resources"]["HttpApi"];
    assert_eq!(api["Type"], "AWS::Serverless::HttpApi");
    assert_eq!(
        api["Properties"]["StageName"], "$default",
        "a named stage would prefix every path the handlers see"
    );
    let throttling = &api["Properties"]["DefaultRouteSettings"];
    assert!(
        !throttling["ThrottlingRateLimit"].is_null()
            && !throttling["ThrottlingBurstLimit"].is_null()
    );
}

// ------------------------------------------------------------------------------------------------
// Functions, the queue, logs.
// ------------------------------------------------------------------------------------------------

#[test]
fn every_function_is_a_cargo_lambda_binary_of_the_workspace_on_al2023() {
    let t = template();
    assert_eq!(functions(&t).len(), FUNCTIONS.len());
    for (function, bin, dir, _) in FUNCTIONS {
        let resource = &t["Resources"][*function];
        assert_eq!(
            resource["Metadata"]["BuildMethod"], "rust-cargolambda",
            "{function}"
        );
        assert_eq!(
            resource["Metadata"]["BuildProperties"]["Binary"], *bin,
            "{function}"
        );
        let manifest = read_repo_file(&format!("{dir}/Cargo.toml"));
        assert!(
            manifest.contains(&format!("[[bin]]\nname = \"{bin}\"")),
            "{dir}/Cargo.toml has no [[bin]] {bin}"
        );
        assert_eq!(
            function_property(&t, function, "Runtime"),
            "provided.al2023",
            "{function}"
        );
        assert_eq!(
            function_property(&t, function, "Handler"),
            "bootstrap",
            "{function}"
        );
        assert_eq!(
            function_property(&t, function, "Architectures"),
            &json!([{"Ref": "Architecture"}]),
            "{function}"
        );
        assert_eq!(
            function_property(&t, function, "CodeUri"),
            ".",
            "{function}: the workspace"
        );
        let memory = function_property(&t, function, "MemorySize")
            .as_u64()
            .unwrap();
        let timeout = function_property(&t, function, "Timeout").as_u64().unwrap();
        assert!(
            (128..=3008).contains(&memory),
            "{function}: memory {memory}"
        );
        assert!((3..=60).contains(&timeout), "{function}: timeout {timeout}");
    }
}

#[test]
fn every_function_logs_to_its_own_log_group_with_retention() {
    let t = template();
    for (function, _, _, _) in FUNCTIONS {
        let group = t["Resources"][*function]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{function}: LoggingConfig.LogGroup is a Ref"));
        let resource = &t["Resources"][group];
        assert_eq!(resource["Type"], "AWS::Logs::LogGroup", "{function}");
        assert!(
            !resource["Properties"]["RetentionInDays"].is_null(),
            "{group}: retention"
        );
    }
    let access = &t["Resources"]["ApiAccessLogGroup"];
    assert!(!access["Properties"]["RetentionInDays"].is_null());
}

#[test]
fn only_the_token_function_gets_the_signing_key_and_the_others_the_public_keys() {
    let t = template();
    for (function, _, _, _) in FUNCTIONS {
        let env = function_environment(&t, function);
        assert_eq!(env["STORE_BACKEND"], "dynamodb", "{function}");
        assert_eq!(env["TABLE_NAME"], json!({"Ref": "Table"}), "{function}");
        assert!(
            env.get("JWT_SIGNING_KEY_PEM").is_none(),
            "{function}: no PEM in any configuration"
        );
        assert!(
            env.get("ALLOW_DEVELOPMENT_SIGNING_KEY").is_none(),
            "{function}: a deployment never allows the committed development key"
        );
        if *function == "TokenFunction" {
            assert_eq!(
                env["JWT_SIGNING_KEY_SECRET_ARN"],
                json!({"Ref": "SigningKeySecret"})
            );
            assert!(env.get("JWT_PUBLIC_JWKS").is_none());
        } else {
            assert_eq!(
                env["JWT_PUBLIC_JWKS"],
                json!({"Ref": "JwtPublicJwks"}),
                "{function}"
            );
            assert!(
                env.get("JWT_SIGNING_KEY_SECRET_ARN").is_none(),
                "{function}"
            );
        }
    }
    let secret = &t["Resources"]["SigningKeySecret"];
    assert_eq!(secret["Type"], "AWS::SecretsManager::Secret");
}

/// BEHAVIOR 11: every instance of a function that lists signs cursors with one generated key;
/// the functions that do not list never see it.
#[test]
fn the_functions_that_list_share_one_generated_cursor_secret() {
    let t = template();
    let listing = [
        "RecordsFunction",
        "UsersFunction",
        "RoutersFunction",
        "WebhooksFunction",
    ];
    for (function, _, _, _) in FUNCTIONS {
        let env = function_environment(&t, function);
        if listing.contains(function) {
            assert_eq!(
                env["CURSOR_SECRET_ARN"],
                json!({"Ref": "CursorSecret"}),
                "{function}: read at cold start, never resolved into the environment"
            );
        } else {
            assert!(env.get("CURSOR_SECRET_ARN").is_none(), "{function}");
        }
        assert!(
            env.get("CURSOR_SECRET").is_none(),
            "{function}: a resolved secret would be readable in the function configuration"
        );
    }
    let cursor = &t["Resources"]["CursorSecret"];
    assert_eq!(cursor["Type"], "AWS::SecretsManager::Secret");
    let generated = &cursor["Properties"]["GenerateSecretString"];
    assert!(
        generated["PasswordLength"].as_u64().unwrap_or(0) >= 32,
        "at least the 32 bytes CURSOR_SECRET needs"
    );
    assert!(cursor["Properties"]["SecretString"].is_null());
    let secret = &t["Resources"]["SigningKeySecret"];
    assert!(
        secret["Properties"]["SecretString"].is_null(),
        "the PEM is put in by the operator, never written in the template"
    );
}

#[test]
fn the_dispatch_function_consumes_the_queue_with_partial_batch_responses() {
    let t = template();
    let events = &t["Resources"]["DispatchFunction"]["Properties"]["Events"];
    let sqs: Vec<_> = events
        .as_object()
        .unwrap()
        .values()
        .filter(|e| e["Type"] == "SQS")
        .collect();
    assert_eq!(sqs.len(), 1);
    let props = &sqs[0]["Properties"];
    assert_eq!(
        props["Queue"],
        json!({"Fn::GetAtt": ["DispatchQueue", "Arn"]})
    );
    assert_eq!(
        props["FunctionResponseTypes"],
        json!(["ReportBatchItemFailures"])
    );
    let batch = props["BatchSize"].as_u64().expect("a batch size");
    assert!((1..=10).contains(&batch), "batch size {batch}");
}

#[test]
fn the_queue_outlasts_six_dispatch_timeouts_and_redrives_to_its_dead_letter_queue() {
    let t = template();
    let timeout = function_property(&t, "DispatchFunction", "Timeout")
        .as_u64()
        .unwrap();
    let queue = &t["Resources"]["DispatchQueue"]["Properties"];
    let visibility = queue["VisibilityTimeout"]
        .as_u64()
        .expect("a visibility timeout");
    assert!(
        visibility >= 6 * timeout,
        "visibility timeout {visibility} s < 6 x dispatch timeout {timeout} s"
    );
    assert_eq!(
        queue["RedrivePolicy"]["deadLetterTargetArn"],
        json!({"Fn::GetAtt": ["DispatchDeadLetterQueue", "Arn"]})
    );
    assert_eq!(queue["RedrivePolicy"]["maxReceiveCount"], 5);
    let dlq = &t["Resources"]["DispatchDeadLetterQueue"];
    assert_eq!(dlq["Type"], "AWS::SQS::Queue");
    let retention = dlq["Properties"]["MessageRetentionPeriod"]
        .as_u64()
        .unwrap();
    let source = queue["MessageRetentionPeriod"].as_u64().unwrap_or(345_600);
    assert!(
        retention > source,
        "the dead-letter queue keeps messages longer than the queue"
    );
}

#[test]
fn the_outputs_name_the_api_the_queues_and_the_table() {
    let t = template();
    for output in [
        "ApiUrl",
        "DispatchQueueUrl",
        "DeadLetterQueueUrl",
        "TableName",
    ] {
        assert!(!t["Outputs"][output]["Value"].is_null(), "output {output}");
    }
}

// ------------------------------------------------------------------------------------------------
// Least privilege, derived from the AWS calls the code makes (infra/iam/recorded-calls.json,
// recorded against the emulator by infra/local-server/tests/iam_recording.rs).
// ------------------------------------------------------------------------------------------------

fn recorded() -> BTreeMap<String, Vec<Value>> {
    recorded_calls().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_function_runs_under_its_own_role() {
    let t = template();
    for (function, _, _, role) in FUNCTIONS {
        let props = &t["Resources"][*function]["Properties"];
        assert_eq!(
            props["Role"],
            json!({"Fn::GetAtt": [role, "Arn"]}),
            "{function}"
        );
        assert!(
            props["Policies"].is_null(),
            "{function}: no SAM policy templates besides its role"
        );
        let role = &t["Resources"][*role];
        assert_eq!(role["Type"], "AWS::IAM::Role");
        assert!(
            role["Properties"]["ManagedPolicyArns"].is_null(),
            "{function}: no managed policies"
        );
        let trust = serde_json::to_string(&role["Properties"]["AssumeRolePolicyDocument"]).unwrap();
        assert!(
            trust.contains("lambda.amazonaws.com"),
            "{function}: assumed by Lambda"
        );
    }
}

/// Least privilege: each role grants exactly what its function's recorded calls need (the Service
/// Authorization Reference's action for each operation, one per item kind for
/// `TransactWriteItems`) and what the platform calls with it (logs, the SQS event source), on
/// the resources the calls named: nothing is missing (a deployed call would be AccessDenied) and
/// nothing is extra.
#[test]
fn every_role_grants_exactly_what_its_function_calls() {
    let problems = role_permission_problems(&template(), &recorded());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The check has teeth: removing any single action from any role's statements, or adding
/// `dynamodb:Scan` to any role, is reported.
#[test]
fn removing_any_single_action_or_adding_a_scan_fails_the_check() {
    let t = template();
    let recorded = recorded();
    let mut mutants = 0;
    for role in function_roles(&t) {
        let policies = t["Resources"][&role]["Properties"]["Policies"]
            .as_array()
            .unwrap()
            .len();
        for p in 0..policies {
            let statements = t["Resources"][&role]["Properties"]["Policies"][p]["PolicyDocument"]
                ["Statement"]
                .as_array()
                .unwrap()
                .len();
            for s in 0..statements {
                let actions = one_or_many(
                    &t["Resources"][&role]["Properties"]["Policies"][p]["PolicyDocument"]
                        ["Statement"][s]["Action"],
                )
                .len();
                for a in 0..actions {
                    let mut mutant = t.clone();
                    let statement = &mut mutant["Resources"][&role]["Properties"]["Policies"][p]
                        ["PolicyDocument"]["Statement"][s];
                    let removed = match &mut statement["Action"] {
                        Value::Array(list) => list.remove(a),
                        single => std::mem::replace(single, Value::Array(Vec::new())),
                    };
                    assert!(
                        !role_permission_problems(&mutant, &recorded).is_empty(),
                        "{role}: removing {removed} went unnoticed"
                    );
                    mutants += 1;
                }
            }
        }
        let mut mutant = t.clone();
        mutant["Resources"][&role]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
            .as_array_mut()
            .unwrap()
            .push(json!({"Effect": "Allow", "Action": "dynamodb:Scan", "Resource": {"Fn::GetAtt": ["Table", "Arn"]}}));
        let problems = role_permission_problems(&mutant, &recorded);
        assert!(
            problems.iter().any(|p| p.contains("dynamodb:Scan")),
            "{role}: an added Scan went unnoticed"
        );
    }
    assert!(mutants > 20, "only {mutants} actions mutated");
}

/// The recorded calls themselves: the assignment's member check (a role once missed
/// `ConditionCheckItem`) and the idempotency release (`DeleteItem`) are among the dispatch
/// function's, so the derivation above covers them.
#[test]
fn the_recording_covers_the_calls_the_review_found_missing() {
    let recorded = recorded();
    let dispatch: BTreeSet<Permission> = recorded["DispatchFunction"]
        .iter()
        .flat_map(actions_of_call)
        .collect();
    for action in ["dynamodb:ConditionCheckItem", "dynamodb:DeleteItem"] {
        assert!(
            dispatch.contains(&(action.to_string(), "Table".to_string())),
            "{action} not recorded: {dispatch:?}"
        );
    }
}

#[test]
fn every_statement_allows_named_resources_of_this_stack_only() {
    let t = template();
    for role in function_roles(&t) {
        for statement in role_statements(&t, &role) {
            assert_eq!(
                statement["Effect"], "Allow",
                "{role}: allow statements only"
            );
            let actions: Vec<&str> = one_or_many(&statement["Action"])
                .into_iter()
                .filter_map(Value::as_str)
                .collect();
            assert!(
                actions.iter().all(|a| !a.contains('*')),
                "{role}: wildcard action {actions:?}"
            );
            for resource in one_or_many(&statement["Resource"]) {
                let xray = actions.iter().all(|a| a.starts_with("xray:"));
                let allowed = resource.get("Ref").is_some()
                    || resource.get("Fn::GetAtt").is_some()
                    || resource["Fn::Sub"]
                        .as_str()
                        .is_some_and(|s| s.starts_with("${"))
                    || (xray && resource == "*");
                assert!(
                    allowed,
                    "{role}: {resource} is not a resource of this stack"
                );
            }
        }
    }
}

/// BEHAVIOR 7: CRM sync retries wait as delayed messages on the dispatch function's own queue:
/// the function knows the queue's URL, may send to it (and to nothing else), and gets the retry
/// delays and the history retention from parameters with BEHAVIOR's defaults.
#[test]
fn the_dispatch_function_sends_crm_sync_retries_to_its_own_queue() {
    let t = template();
    let env = function_property(&t, "DispatchFunction", "Environment");
    let vars = &env["Variables"];
    assert_eq!(vars["DISPATCH_QUEUE_URL"], json!({"Ref": "DispatchQueue"}));
    assert_eq!(
        vars["CRM_SYNC_RETRY_DELAYS"],
        json!({"Ref": "CrmSyncRetryDelays"})
    );
    assert_eq!(
        vars["DISPATCH_HISTORY_RETENTION_DAYS"],
        json!({"Ref": "HistoryRetentionDays"})
    );
    assert_eq!(
        t["Parameters"]["CrmSyncRetryDelays"]["Default"],
        "30,300,1800"
    );
    assert_eq!(t["Parameters"]["HistoryRetentionDays"]["Default"], 400);
    // Each function sends to its own queue; dispatch also hands webhook deliveries on to the
    // webhooks function's queue (BEHAVIOR 13). No other role sends anything.
    let sends_to = |role: &str| -> BTreeSet<String> {
        role_statements(&t, role)
            .into_iter()
            .filter(|s| {
                one_or_many(&s["Action"])
                    .iter()
                    .any(|a| a.as_str() == Some("sqs:SendMessage"))
            })
            .flat_map(|s| one_or_many(&s["Resource"]).into_iter().cloned())
            .map(|r| r["Fn::GetAtt"][0].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        sends_to("DispatchRole"),
        BTreeSet::from(["DispatchQueue".to_string(), "WebhookQueue".to_string()])
    );
    assert_eq!(
        sends_to("WebhooksRole"),
        BTreeSet::from(["WebhookQueue".to_string()])
    );
    for role in function_roles(&t) {
        if role != "DispatchRole" && role != "WebhooksRole" {
            assert!(
                !role_actions(&t, &role).contains("sqs:SendMessage"),
                "{role}"
            );
        }
    }
}

/// BEHAVIOR 10: `Idempotency-Key` answers are kept 24 h and queue markers 15 days, and BEHAVIOR 8
/// history entries 400 days, each with an `expires_at` (epoch seconds) that DynamoDB's TTL
/// deletes by; the table must enable it on exactly that attribute.
#[test]
fn the_table_expires_idempotency_items_by_their_expires_at() {
    let t = template();
    let ttl = &t["Resources"]["Table"]["Properties"]["TimeToLiveSpecification"];
    assert_eq!(ttl["AttributeName"], "expires_at");
    assert_eq!(ttl["Enabled"], true);
}

// ------------------------------------------------------------------------------------------------
// Operations (`docs/operations.md`): alarms on every function and queue, the API, the CRM and due
// work, all notifying one SNS topic; a dashboard; X-Ray tracing.
// ------------------------------------------------------------------------------------------------

/// The alarms of the template: (logical id, properties).
fn alarms(t: &Value) -> Vec<(String, Value)> {
    t["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::CloudWatch::Alarm")
        .map(|(id, r)| (id.clone(), r["Properties"].clone()))
        .collect()
}

/// The single metrics an alarm watches: its own, or those of its metric math.
fn watched(alarm: &Value) -> Vec<Value> {
    if alarm["MetricName"].is_string() {
        return vec![json!({
            "Namespace": alarm["Namespace"],
            "MetricName": alarm["MetricName"],
            "Dimensions": alarm["Dimensions"],
        })];
    }
    alarm["Metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["MetricStat"].is_object())
        .map(|m| m["MetricStat"]["Metric"].clone())
        .collect()
}

fn alarm_on(t: &Value, namespace: &str, metric: &str, dimension: (&str, Value)) -> Option<String> {
    alarms(t).into_iter().find_map(|(id, alarm)| {
        watched(&alarm)
            .iter()
            .any(|m| {
                m["Namespace"] == namespace
                    && m["MetricName"] == metric
                    && m["Dimensions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|d| d["Name"] == dimension.0 && d["Value"] == dimension.1)
            })
            .then_some(id)
    })
}

#[test]
fn every_alarm_notifies_the_alarm_topic_which_an_email_parameter_subscribes_to() {
    let t = template();
    let all = alarms(&t);
    assert!(all.len() >= 20, "{} alarms", all.len());
    for (id, alarm) in &all {
        assert_eq!(
            alarm["AlarmActions"],
            json!([{"Ref": "AlarmTopic"}]),
            "{id} notifies the topic"
        );
        let description = alarm["AlarmDescription"].to_string();
        assert!(
            description.contains("docs/operations.md#"),
            "{id}: the description points to its runbook section"
        );
        let anchor: String = description
            .split("docs/operations.md#")
            .nth(1)
            .unwrap()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let runbook = read_repo_file("docs/operations.md");
        assert!(
            runbook.contains(&format!("<a id=\"{anchor}\"></a>")),
            "{id}: docs/operations.md has no section {anchor}"
        );
    }
    assert_eq!(t["Resources"]["AlarmTopic"]["Type"], "AWS::SNS::Topic");
    let subscription = &t["Resources"]["AlarmEmailSubscription"];
    assert_eq!(subscription["Properties"]["Protocol"], "email");
    assert_eq!(
        subscription["Properties"]["Endpoint"],
        json!({"Ref": "AlarmEmail"})
    );
    assert!(t["Parameters"]["AlarmEmail"].is_object());
}

#[test]
fn every_function_has_error_and_throttle_alarms() {
    let t = template();
    for (function, _, _, _) in FUNCTIONS {
        for metric in ["Errors", "Throttles"] {
            assert!(
                alarm_on(
                    &t,
                    "AWS/Lambda",
                    metric,
                    ("FunctionName", json!({"Ref": function}))
                )
                .is_some(),
                "{function}: no {metric} alarm"
            );
        }
    }
}

#[test]
fn every_queue_has_its_alarm_and_every_dead_letter_queue_one_on_any_message() {
    let t = template();
    let resources = t["Resources"].as_object().unwrap();
    let dead_letter: BTreeSet<String> = resources
        .values()
        .filter_map(|r| {
            r["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0].as_str()
        })
        .map(str::to_string)
        .collect();
    let queues: Vec<&String> = resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::SQS::Queue")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(queues.len(), 4, "{queues:?}");
    for queue in queues {
        let name = json!({"Fn::GetAtt": [queue, "QueueName"]});
        if dead_letter.contains(queue) {
            let id = alarm_on(
                &t,
                "AWS/SQS",
                "ApproximateNumberOfMessagesVisible",
                ("QueueName", name),
            )
            .unwrap_or_else(|| panic!("{queue}: no alarm on a dead letter"));
            assert_eq!(t["Resources"][&id]["Properties"]["Threshold"], 1, "{id}");
        } else {
            alarm_on(
                &t,
                "AWS/SQS",
                "ApproximateAgeOfOldestMessage",
                ("QueueName", name),
            )
            .unwrap_or_else(|| panic!("{queue}: no alarm on its oldest message"));
        }
    }
}

#[test]
fn the_api_the_crm_sync_and_overdue_due_work_have_alarms() {
    let t = template();
    let api = ("ApiId", json!({"Ref": "HttpApi"}));
    let rate = alarm_on(&t, "AWS/ApiGateway", "5xx", api.clone()).expect("a 5xx alarm");
    assert!(
        watched(&t["Resources"][&rate]["Properties"])
            .iter()
            .any(|m| m["MetricName"] == "Count"),
        "the 5xx alarm is a rate of the requests"
    );
    let latency = alarm_on(&t, "AWS/ApiGateway", "Latency", api).expect("a latency alarm");
    assert_eq!(
        t["Resources"][&latency]["Properties"]["ExtendedStatistic"],
        "p99"
    );
    let crm = alarm_on(
        &t,
        "AccountRouting",
        "DueWorkRuns",
        ("kind", json!("crm_sync")),
    )
    .expect("a CRM sync failure alarm");
    assert!(watched(&t["Resources"][&crm]["Properties"])
        .iter()
        .any(|m| m["Dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["Name"] == "outcome" && d["Value"] == "failed")));
    for kind in ["crm_sync", "webhook_delivery", "sla_check"] {
        let id = alarm_on(
            &t,
            "AccountRouting",
            "DueWorkOverdueSeconds",
            ("kind", json!(kind)),
        )
        .unwrap_or_else(|| panic!("no overdue alarm for {kind}"));
        assert_eq!(
            t["Resources"][&id]["Properties"]["Threshold"], 300,
            "{kind}: its due time plus 5 minutes"
        );
    }
    // Every custom metric an alarm watches is one the functions write (docs/operations.md).
    let runbook = read_repo_file("docs/operations.md");
    for (id, alarm) in alarms(&t) {
        for metric in watched(&alarm) {
            if metric["Namespace"] == "AccountRouting" {
                let name = metric["MetricName"].as_str().unwrap();
                assert!(
                    runbook.contains(&format!("| metric `{name}`")),
                    "{id}: {name} is not a documented metric"
                );
            }
        }
    }
}

#[test]
fn every_function_is_traced_and_the_dashboard_shows_the_main_figures() {
    let t = template();
    for (function, _, _, _) in FUNCTIONS {
        assert_eq!(
            function_property(&t, function, "Tracing"),
            "Active",
            "{function}"
        );
    }
    let dashboard = &t["Resources"]["Dashboard"];
    assert_eq!(dashboard["Type"], "AWS::CloudWatch::Dashboard");
    let body = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
        .as_str()
        .expect("a substituted JSON body");
    let parsed: Value = serde_json::from_str(body).expect("the body is JSON");
    let text = parsed.to_string();
    for figure in [
        "5xx",
        "Latency",
        "Dispatches",
        "DueWorkRuns",
        "ApproximateAgeOfOldestMessage",
        "ApproximateNumberOfMessagesVisible",
        "DueWorkOverdueSeconds",
        "Errors",
    ] {
        assert!(text.contains(figure), "the dashboard shows {figure}");
    }
}

/// Each function's peak resident memory, at its cold start and after 1,000 warm
/// invocations, is at most half the `MemorySize` the template gives it. The figures are the ones
/// `infra/scripts/bench-coldstart.sh` measured last (release build, production configuration on
/// the emulator) and wrote to `infra/bench/memory.json`; run it again after a change that can
/// move them (docs/performance.md, "Memory").
#[test]
fn every_function_peaks_at_most_half_its_memory_size_cold_and_after_1000_warm_invocations() {
    let t = template();
    let figures: Value = serde_json::from_str(&read_repo_file("infra/bench/memory.json"))
        .expect("infra/bench/memory.json is JSON");
    for (id, binary, _, _) in FUNCTIONS {
        // Lambda's MemorySize is in MB of 1,048,576 bytes: MiB.
        let memory_size = function_property(&t, id, "MemorySize")
            .as_u64()
            .unwrap_or_else(|| panic!("{id} has a MemorySize"));
        let measured = &figures[*binary];
        assert!(
            measured["warm_invocations"].as_u64() >= Some(1000),
            "{binary}: measured after at least 1,000 warm invocations: {measured}"
        );
        let statuses: Vec<&str> = measured["statuses"]
            .as_array()
            .unwrap_or_else(|| panic!("{binary}: the answers' statuses: {measured}"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !statuses.is_empty() && statuses.iter().all(|s| s.starts_with('2')),
            "{binary}: measured on successful answers only: {statuses:?}"
        );
        for key in ["cold_peak_mib", "warm_peak_mib"] {
            let peak = measured[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{binary}: {key}: {measured}"));
            assert!(
                peak > 1.0 && peak <= memory_size as f64 / 2.0,
                "{binary}: {key} {peak} MiB against a MemorySize of {memory_size} MB"
            );
        }
    }
}
