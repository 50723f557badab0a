//! Reading `template.yaml` the way CloudFormation does, for the checks in `tests/` that cfn-lint
//! and `sam validate` miss (a `!Ref` in `Globals`, a `!GetAtt` of a missing resource inside an
//! event, a `${Name}` inside `!Sub`), and for the route, queue and policy checks.
//!
//! CloudFormation's short tags (`!Ref X`, `!GetAtt A.B`, `!Sub s`, `!If [...]`, ...) become their
//! long JSON forms (`{"Ref": "X"}`, `{"Fn::GetAtt": ["A", "B"]}`, `{"Fn::Sub": "s"}`, ...), so
//! everything else walks one plain JSON tree.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// CloudFormation's pseudo parameters: valid targets of `Ref` and `${...}` without a declaration.
pub const PSEUDO_PARAMETERS: &[&str] = &[
    "AWS::AccountId",
    "AWS::NotificationARNs",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
];

/// The repository root (two levels above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Reads and parses a file of the repository, relative to its root.
///
/// Panics with the path when the file cannot be read: a test helper.
pub fn read_repo_file(relative: &str) -> String {
    let path = repo_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Parses a CloudFormation / SAM template written in YAML into its JSON form.
///
/// Errors: the YAML parser's message, or a tag this reader does not know.
pub fn parse_template(text: &str) -> Result<Value, String> {
    let yaml: serde_norway::Value = serde_norway::from_str(text).map_err(|e| e.to_string())?;
    yaml_to_json(yaml)
}

/// Converts a YAML value with CloudFormation short tags into the long JSON form.
///
/// Errors: a tag that is not a CloudFormation function, a non-scalar mapping key, or a number
/// JSON cannot hold.
pub fn yaml_to_json(yaml: serde_norway::Value) -> Result<Value, String> {
    use serde_norway::Value as Y;
    Ok(match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n
                    .as_f64()
                    .ok_or_else(|| format!("number {n} out of range"))?;
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("number {n} is not finite"))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(yaml_to_json)
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(mapping) => {
            let mut map = Map::new();
            for (key, value) in mapping {
                let key = match key {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => return Err(format!("unsupported mapping key {other:?}")),
                };
                map.insert(key, yaml_to_json(value)?);
            }
            Value::Object(map)
        }
        Y::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            let name = tag.trim_start_matches('!');
            let value = yaml_to_json(tagged.value)?;
            let long = match name {
                "Ref" => "Ref".to_string(),
                "Condition" => "Condition".to_string(),
                "GetAtt" => {
                    // `!GetAtt Resource.Attribute` (the attribute may itself contain dots).
                    let value = match value {
                        Value::String(s) => match s.split_once('.') {
                            Some((resource, attribute)) => {
                                Value::Array(vec![resource.into(), attribute.into()])
                            }
                            None => {
                                return Err(format!("!GetAtt {s}: expected Resource.Attribute"))
                            }
                        },
                        other => other,
                    };
                    return Ok(single("Fn::GetAtt", value));
                }
                "Base64" | "Cidr" | "FindInMap" | "GetAZs" | "ImportValue" | "Join" | "Select"
                | "Split" | "Sub" | "Transform" | "And" | "Equals" | "If" | "Not" | "Or"
                | "Length" | "ToJsonString" => {
                    format!("Fn::{name}")
                }
                other => return Err(format!("unknown tag !{other}")),
            };
            single(&long, value)
        }
    })
}

fn single(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_string(), value);
    Value::Object(map)
}

/// The names inside `${...}` of a `Fn::Sub` string, without the `${!Literal}` escapes.
pub fn sub_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let inner = &after[..end];
        if !inner.starts_with('!') {
            names.push(inner.trim().to_string());
        }
        rest = &after[end + 1..];
    }
    names
}

/// Every `Ref`, `Fn::GetAtt` and `Fn::Sub` name in `template` (Globals, Resources, Outputs,
/// Conditions, everywhere) that names no resource, parameter or pseudo parameter, and every
/// `Fn::If` / `Condition` that names no condition; as `path: problem` lines. Empty when sound.
pub fn broken_references(template: &Value) -> Vec<String> {
    let keys = |section: &str| -> BTreeSet<String> {
        template
            .get(section)
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let scope = Scope {
        resources: keys("Resources"),
        parameters: keys("Parameters"),
        conditions: keys("Conditions"),
    };
    let mut problems = Vec::new();
    walk(template, "", &scope, &BTreeSet::new(), &mut problems);
    problems
}

struct Scope {
    resources: BTreeSet<String>,
    parameters: BTreeSet<String>,
    conditions: BTreeSet<String>,
}

impl Scope {
    fn is_value(&self, name: &str) -> bool {
        self.resources.contains(name)
            || self.parameters.contains(name)
            || PSEUDO_PARAMETERS.contains(&name)
    }
}

fn walk(
    node: &Value, path: &str, scope: &Scope, sub_vars: &BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    match node {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), scope, sub_vars, problems);
            }
        }
        Value::Object(map) => {
            if map.len() == 1 {
                let (key, value) = map.iter().next().expect("one entry");
                let here = format!("{path}.{key}");
                match key.as_str() {
                    "Ref" => match value.as_str() {
                        Some(name) if scope.is_value(name) => {}
                        Some(name) => problems.push(format!("{here}: Ref to unknown {name:?}")),
                        None => problems.push(format!("{here}: Ref to a non-string")),
                    },
                    "Fn::GetAtt" => match getatt_resource(value) {
                        Some(name) if scope.resources.contains(&name) => {}
                        Some(name) => {
                            problems.push(format!("{here}: GetAtt of unknown resource {name:?}"))
                        }
                        None => problems.push(format!("{here}: malformed GetAtt {value}")),
                    },
                    "Fn::Sub" => {
                        let (text, vars) = match value {
                            Value::String(s) => (Some(s.as_str()), None),
                            Value::Array(a) if a.len() == 2 => (a[0].as_str(), a[1].as_object()),
                            _ => (None, None),
                        };
                        let Some(text) = text else {
                            problems.push(format!("{here}: malformed Sub {value}"));
                            return;
                        };
                        let mut local = sub_vars.clone();
                        if let Some(vars) = vars {
                            for (name, var) in vars {
                                local.insert(name.clone());
                                walk(var, &format!("{here}.{name}"), scope, sub_vars, problems);
                            }
                        }
                        for name in sub_names(text) {
                            let ok = match name.split_once('.') {
                                Some((resource, _)) => scope.resources.contains(resource),
                                None => scope.is_value(&name) || local.contains(&name),
                            };
                            if !ok {
                                problems.push(format!("{here}: ${{{name}}} names nothing"));
                            }
                        }
                        return;
                    }
                    "Fn::If" => {
                        if let Some(condition) = value.get(0).and_then(Value::as_str) {
                            if !scope.conditions.contains(condition) {
                                problems.push(format!("{here}: unknown condition {condition:?}"));
                            }
                        }
                    }
                    "Condition" if value.is_string() && path.contains(".Conditions") => {
                        let condition = value.as_str().unwrap_or_default();
                        if !scope.conditions.contains(condition) {
                            problems.push(format!("{here}: unknown condition {condition:?}"));
                        }
                    }
                    _ => {}
                }
            }
            for (key, value) in map {
                walk(value, &format!("{path}.{key}"), scope, sub_vars, problems);
            }
        }
        _ => {}
    }
}

fn getatt_resource(value: &Value) -> Option<String> {
    match value {
        Value::Array(parts) if parts.len() == 2 => parts[0].as_str().map(str::to_string),
        Value::String(s) => s.split_once('.').map(|(r, _)| r.to_string()),
        _ => None,
    }
}

/// One route of the HTTP API: `method` (`GET`, ..., or `ANY`) and `path` (`/contacts/{contactId}`,
/// or `$default`), served by the function `function` through its event `event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// HTTP method in upper case, or `ANY`.
    pub method: String,
    /// The route path, or `$default`.
    pub path: String,
    /// Logical id of the function.
    pub function: String,
    /// Name of the function's event.
    pub event: String,
}

impl Route {
    /// The route key as API Gateway writes it in an event: `GET /users/{userId}` or `$default`.
    pub fn key(&self) -> String {
        if self.path == "$default" {
            "$default".into()
        } else {
            format!("{} {}", self.method, self.path)
        }
    }
}

/// The `AWS::Serverless::Function` resources of the template, by logical id.
pub fn functions(template: &Value) -> Vec<(&String, &Value)> {
    template["Resources"]
        .as_object()
        .map(|resources| {
            resources
                .iter()
                .filter(|(_, r)| r["Type"] == "AWS::Serverless::Function")
                .collect()
        })
        .unwrap_or_default()
}

/// Every `HttpApi` event of every function. An event without `Path` is the `$default` route.
pub fn api_routes(template: &Value) -> Vec<Route> {
    let mut routes = Vec::new();
    for (function, resource) in functions(template) {
        let Some(events) = resource["Properties"]["Events"].as_object() else {
            continue;
        };
        for (event, spec) in events {
            if spec["Type"] != "HttpApi" {
                continue;
            }
            let props = &spec["Properties"];
            let path = props["Path"].as_str().unwrap_or("$default").to_string();
            let method = props["Method"]
                .as_str()
                .unwrap_or("ANY")
                .to_ascii_uppercase();
            routes.push(Route {
                method,
                path,
                function: function.clone(),
                event: event.clone(),
            });
        }
    }
    routes
}

/// The route API Gateway (HTTP API) picks for `method path`: the most specific path (static
/// segments before variables, variables before greedy `{x+}`), the exact method before `ANY`,
/// and `$default` when nothing matches. A trailing `/` is matched as if absent, as API Gateway
/// does (a route key itself cannot end with `/`).
pub fn resolve_route<'a>(routes: &'a [Route], method: &str, path: &str) -> Option<&'a Route> {
    let path = path.split('?').next().unwrap_or(path);
    let trimmed = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    let request: Vec<&str> = trimmed.split('/').skip(1).collect();
    let mut best: Option<(Vec<u8>, u8, &Route)> = None;
    for route in routes.iter().filter(|r| r.path != "$default") {
        if route.method != "ANY" && !route.method.eq_ignore_ascii_case(method) {
            continue;
        }
        let Some(rank) = match_rank(&route.path, &request) else {
            continue;
        };
        let method_rank = u8::from(route.method != "ANY");
        let better = match &best {
            None => true,
            Some((r, m, _)) => (&rank, method_rank) > (r, *m),
        };
        if better {
            best = Some((rank, method_rank, route));
        }
    }
    best.map(|(_, _, r)| r)
        .or_else(|| routes.iter().find(|r| r.path == "$default"))
}

/// Per segment: 2 static, 1 variable, 0 greedy; `None` when the route does not match.
fn match_rank(route: &str, request: &[&str]) -> Option<Vec<u8>> {
    let segments: Vec<&str> = route.split('/').skip(1).collect();
    let mut rank = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let greedy = segment.starts_with('{') && segment.ends_with("+}");
        if greedy {
            if request.len() <= i || request[i].is_empty() {
                return None;
            }
            rank.push(0);
            return Some(rank);
        }
        let part = request.get(i)?;
        if segment.starts_with('{') && segment.ends_with('}') {
            if part.is_empty() {
                return None;
            }
            rank.push(1);
        } else if segment == part {
            rank.push(2);
        } else {
            return None;
        }
    }
    (segments.len() == request.len()).then_some(rank)
}

/// The actions of every `Allow` statement of the inline policies of the role `role`.
pub fn role_actions(template: &Value, role: &str) -> BTreeSet<String> {
    role_statements(template, role)
        .into_iter()
        .filter(|s| s["Effect"] == "Allow")
        .flat_map(|s| one_or_many(&s["Action"]))
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

/// Every statement of the inline policies of the role `role`.
pub fn role_statements<'a>(template: &'a Value, role: &str) -> Vec<&'a Value> {
    template["Resources"][role]["Properties"]["Policies"]
        .as_array()
        .map(|policies| {
            policies
                .iter()
                .flat_map(|p| one_or_many(&p["PolicyDocument"]["Statement"]))
                .collect()
        })
        .unwrap_or_default()
}

/// A value that IAM allows as one item or a list of items, as a list.
pub fn one_or_many(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// The value of `property` of the function `function`, or of `Globals.Function` when the function
/// does not set it (SAM's merge for scalars and lists).
pub fn function_property<'a>(template: &'a Value, function: &str, property: &str) -> &'a Value {
    let own = &template["Resources"][function]["Properties"][property];
    if own.is_null() {
        &template["Globals"]["Function"][property]
    } else {
        own
    }
}

/// The environment of `function`: `Globals.Function.Environment.Variables` overlaid with the
/// function's own (SAM merges maps).
pub fn function_environment(template: &Value, function: &str) -> Map<String, Value> {
    let mut env = template["Globals"]["Function"]["Environment"]["Variables"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(own) =
        template["Resources"][function]["Properties"]["Environment"]["Variables"].as_object()
    {
        env.extend(own.clone());
    }
    env
}

/// One permission: an IAM action on a resource of the stack, the resource named by its logical id
/// (`Table`, `Table/index` for its indexes, `DispatchQueue`, `SealingKey`, a log group, or `*`).
pub type Permission = (String, String);

/// The recorded AWS calls of the functions (`infra/iam/recorded-calls.json`, written by the
/// local server's `iam_recording` test): function logical id -> calls.
pub fn recorded_calls() -> Result<BTreeMap<String, Vec<Value>>, String> {
    serde_json::from_str(&read_repo_file("infra/iam/recorded-calls.json"))
        .map_err(|e| format!("infra/iam/recorded-calls.json: {e}"))
}

/// The IAM actions one recorded call needs, as the AWS Service Authorization Reference defines
/// them: an operation is authorized as the action of its name, except `TransactWriteItems`,
/// which has no action of its own: each item is authorized as `PutItem`, `UpdateItem`,
/// `DeleteItem` or `ConditionCheckItem`; and SQS's batch operations, authorized as their single forms.
pub fn actions_of_call(call: &Value) -> Vec<Permission> {
    let service = call["service"].as_str().unwrap_or_default();
    let operation = call["operation"].as_str().unwrap_or_default();
    let resource = call["resource"].as_str().unwrap_or_default().to_string();
    if service == "dynamodb" && operation == "TransactWriteItems" {
        return call["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|kind| {
                let action = match kind {
                    "Put" => "PutItem",
                    "Update" => "UpdateItem",
                    "Delete" => "DeleteItem",
                    "ConditionCheck" => "ConditionCheckItem",
                    other => other,
                };
                (format!("dynamodb:{action}"), resource.clone())
            })
            .collect();
    }
    // Amazon SQS has no IAM actions of its own for its batch operations: `sqs:SendMessage`,
    // `sqs:DeleteMessage` and `sqs:ChangeMessageVisibility` authorize `SendMessageBatch`,
    // `DeleteMessageBatch` and `ChangeMessageVisibilityBatch` (SQS Developer Guide, "Amazon SQS
    // batch actions"; the Service Authorization Reference lists no `*Batch` action for SQS).
    let operation = match (service, operation) {
        ("sqs", "SendMessageBatch") => "SendMessage",
        ("sqs", "DeleteMessageBatch") => "DeleteMessage",
        ("sqs", "ChangeMessageVisibilityBatch") => "ChangeMessageVisibility",
        (_, operation) => operation,
    };
    vec![(format!("{service}:{operation}"), resource)]
}

/// The function of `role` (whose `Role` is `!GetAtt <role>.Arn`).
pub fn function_of_role<'a>(template: &'a Value, role: &str) -> Option<&'a str> {
    functions(template)
        .into_iter()
        .find(|(_, f)| f["Properties"]["Role"]["Fn::GetAtt"][0] == role)
        .map(|(name, _)| name.as_str())
}

/// Every role the functions run under.
pub fn function_roles(template: &Value) -> Vec<String> {
    functions(template)
        .into_iter()
        .filter_map(|(_, f)| f["Properties"]["Role"]["Fn::GetAtt"][0].as_str())
        .map(str::to_string)
        .collect()
}

/// What a role needs besides its function's code: writing its log group, the actions the SQS
/// event source mapping calls with the function's role (receive, delete, read the queue's
/// attributes), and the X-Ray segments of an actively traced function.
pub fn platform_permissions(template: &Value, function: &str) -> BTreeSet<Permission> {
    let mut needed = BTreeSet::new();
    let properties = &template["Resources"][function]["Properties"];
    if let Some(group) = properties["LoggingConfig"]["LogGroup"]["Ref"].as_str() {
        for action in ["logs:CreateLogStream", "logs:PutLogEvents"] {
            needed.insert((action.to_string(), group.to_string()));
        }
    }
    for event in properties["Events"]
        .as_object()
        .into_iter()
        .flat_map(|e| e.values())
    {
        if event["Type"] == "SQS" {
            let queue = event["Properties"]["Queue"]["Fn::GetAtt"][0]
                .as_str()
                .unwrap_or_default();
            for action in [
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:GetQueueAttributes",
            ] {
                needed.insert((action.to_string(), queue.to_string()));
            }
        }
    }
    if function_property(template, function, "Tracing") == "Active" {
        for action in ["xray:PutTraceSegments", "xray:PutTelemetryRecords"] {
            needed.insert((action.to_string(), "*".to_string()));
        }
    }
    needed
}

/// The permissions `role` must have: those of its function's recorded calls and the platform's.
///
/// Errors: a role without a function, or a function without recorded calls.
pub fn required_permissions(
    template: &Value, recorded: &BTreeMap<String, Vec<Value>>, role: &str,
) -> Result<BTreeSet<Permission>, String> {
    let function =
        function_of_role(template, role).ok_or_else(|| format!("{role}: no function uses it"))?;
    let calls = recorded.get(function).ok_or_else(|| {
        format!("{function}: no recorded calls (regenerate infra/iam/recorded-calls.json)")
    })?;
    let mut needed = platform_permissions(template, function);
    needed.extend(calls.iter().flat_map(actions_of_call));
    Ok(needed)
}

/// The logical id a statement's resource names: `!GetAtt X.Arn` and `!Ref X` are `X`,
/// `!Sub ${X.Arn}/index/*` is `X/index`, `*` is `*`.
pub fn resource_name(resource: &Value) -> String {
    if let Some(name) = resource["Fn::GetAtt"][0].as_str() {
        return name.to_string();
    }
    if let Some(name) = resource["Ref"].as_str() {
        return name.to_string();
    }
    if let Some(text) = resource["Fn::Sub"].as_str() {
        if let Some(rest) = text.strip_prefix("${") {
            let (name, tail) = rest.split_once('}').unwrap_or((rest, ""));
            let name = name.trim_end_matches(".Arn");
            return match tail {
                "/index/*" => format!("{name}/index"),
                "" => name.to_string(),
                other => format!("{name}{other}"),
            };
        }
        return text.to_string();
    }
    resource.as_str().unwrap_or_default().to_string()
}

/// The permissions the role's `Allow` statements grant, one per action and resource.
pub fn granted_permissions(template: &Value, role: &str) -> BTreeSet<Permission> {
    let mut granted = BTreeSet::new();
    for statement in role_statements(template, role) {
        if statement["Effect"] != "Allow" {
            continue;
        }
        for action in one_or_many(&statement["Action"]) {
            for resource in one_or_many(&statement["Resource"]) {
                granted.insert((
                    action.as_str().unwrap_or_default().to_string(),
                    resource_name(resource),
                ));
            }
        }
    }
    granted
}

/// Every difference between what each function role grants and what its function needs
/// (least privilege both ways): `missing` permissions make a deployed call fail with
/// AccessDenied, `extra` ones grant what no recorded call needs. Empty when they match.
pub fn role_permission_problems(
    template: &Value, recorded: &BTreeMap<String, Vec<Value>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for role in function_roles(template) {
        let needed = match required_permissions(template, recorded, &role) {
            Ok(needed) => needed,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let granted = granted_permissions(template, &role);
        for (action, resource) in needed.difference(&granted) {
            problems.push(format!("{role}: missing {action} on {resource}"));
        }
        for (action, resource) in granted.difference(&needed) {
            problems.push(format!(
                "{role}: grants {action} on {resource}, which no recorded call needs"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_tags_become_their_long_forms() {
        let template = parse_template(
            "A: !Ref X\nB: !GetAtt T.Arn\nC: !Sub '${T.Arn}/index/*'\nD: !If [c, 1, 2]\n\
             E: !GetAtt T.StreamSpecification.StreamArn\nF: !Join ['', [a, !Ref Y]]\n",
        )
        .expect("parses");
        assert_eq!(
            template,
            json!({
                "A": {"Ref": "X"},
                "B": {"Fn::GetAtt": ["T", "Arn"]},
                "C": {"Fn::Sub": "${T.Arn}/index/*"},
                "D": {"Fn::If": ["c", 1, 2]},
                "E": {"Fn::GetAtt": ["T", "StreamSpecification.StreamArn"]},
                "F": {"Fn::Join": ["", ["a", {"Ref": "Y"}]]},
            })
        );
    }

    #[test]
    fn an_unknown_tag_is_refused() {
        let error = parse_template("A: !Reff X\n").expect_err("unknown tag");
        assert!(error.contains("!Reff"), "{error}");
    }

    #[test]
    fn sub_names_skip_the_literal_escape() {
        assert_eq!(
            sub_names("arn:${AWS::Partition}:x:${Table.Arn}/${!Literal}-${ Name }"),
            vec!["AWS::Partition", "Table.Arn", "Name"]
        );
    }

    const BROKEN: &str = r#"
Parameters:
  Stage: {Type: String}
Globals:
  Function:
    Environment:
      Variables:
        TABLE_NAME: !Ref Tabel
Resources:
  Table: {Type: AWS::DynamoDB::Table}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Role: !GetAtt Role.Arn
      Events:
        Queue:
          Type: SQS
          Properties:
            Queue: !GetAtt Queue.Arn
      Environment:
        Variables:
          A: !Sub "${Stage}-${AWS::Region}-${Table.Arn}-${Missing}-${!Escaped}"
          B: !Sub ["${Local}-${Other}", {Local: !Ref Stage}]
          C: !Ref AWS::AccountId
          D: !If [NoSuchCondition, a, b]
Outputs:
  Url:
    Value: !Sub "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
"#;

    #[test]
    fn every_broken_reference_is_found_wherever_it_is() {
        let template = parse_template(BROKEN).expect("parses");
        let problems = broken_references(&template);
        let expected = [
            ".Globals.Function.Environment.Variables.TABLE_NAME.Ref: Ref to unknown \"Tabel\"",
            ".Resources.Fn.Properties.Role.Fn::GetAtt: GetAtt of unknown resource \"Role\"",
            ".Resources.Fn.Properties.Events.Queue.Properties.Queue.Fn::GetAtt: GetAtt of unknown resource \"Queue\"",
            ".Resources.Fn.Properties.Environment.Variables.A.Fn::Sub: ${Missing} names nothing",
            ".Resources.Fn.Properties.Environment.Variables.B.Fn::Sub: ${Other} names nothing",
            ".Resources.Fn.Properties.Environment.Variables.D.Fn::If: unknown condition \"NoSuchCondition\"",
            ".Outputs.Url.Value.Fn::Sub: ${Api} names nothing",
        ];
        let mut problems = problems;
        problems.sort();
        let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(problems, expected);
    }

    fn route(method: &str, path: &str, function: &str) -> Route {
        Route {
            method: method.into(),
            path: path.into(),
            function: function.into(),
            event: String::new(),
        }
    }

    #[test]
    fn route_resolution_prefers_static_segments_and_exact_methods() {
        let routes = vec![
            route("GET", "/users/{userId}", "ById"),
            route("ANY", "/users/{userId}", "AnyById"),
            route("GET", "/users/me", "Me"),
            route("ANY", "/files/{path+}", "Greedy"),
            route("ANY", "$default", "Default"),
        ];
        let cases = [
            ("GET", "/users/42", "ById"),
            ("DELETE", "/users/42", "AnyById"),
            ("GET", "/users/me", "Me"),
            ("PATCH", "/users/me", "AnyById"),
            ("GET", "/users/42/", "ById"),
            ("GET", "/users", "Default"),
            ("GET", "/users/42/x", "Default"),
            ("GET", "/files/a/b/c", "Greedy"),
            ("GET", "/files", "Default"),
            ("GET", "/", "Default"),
        ];
        for (method, path, expected) in cases {
            let got = resolve_route(&routes, method, path).map(|r| r.function.as_str());
            assert_eq!(got, Some(expected), "{method} {path}");
        }
    }
}
