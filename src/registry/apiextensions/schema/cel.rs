//! `x-kubernetes-validations`: the CEL rules of a custom resource's schema, compiled once when
//! the definition's schema is read and evaluated on every create and update (apiextensions-
//! apiserver's `schema/cel`). I/O-free.
//!
//! - [`Rule::compile`] checks a rule as upstream's definition validation does (its fields, then
//!   the expression and its `messageExpression`) and keeps the parsed program. The interpreter
//!   is the `cel` crate (its standard library and its strings and lists extensions); Kubernetes'
//!   own libraries are added in [`library`]. Rules of the structural part of a schema are
//!   type-checked as cel-go's checker does ([`check`]: `self` and `oldSelf` typed from the
//!   node's schema) and their worst-case cost estimated in cel-go's units ([`cost`]);
//!   [`cost_errors`] is upstream's refusal, at definition write, of rules whose estimate
//!   times the most times their node can appear, or whose total, is over its static limits.
//! - [`validate`] walks an object with its schema (and, on update, the old object correlated
//!   as upstream correlates it: by property, map key and `x-kubernetes-list-map-keys`) and
//!   evaluates each node's rules with `self` (and `oldSelf`) bound to the node's value.
//! - Cost: the crate has no cost tracking, so each program is rewritten once, when compiled:
//!   every comprehension's range charges its size times the cost of the loop's body before the
//!   loop runs, and every value read whole (a variable or field used as a value, the result of
//!   `+`) charges its size. The charges add up per evaluation against upstream's per-call limit
//!   (`PerCallLimit`) and per object against `RuntimeCELCostBudget`, so no rule can make the
//!   server spin: a loop over a list is refused before it starts when it would cost too much.
//!   The figures are not cel-go's cost units, but of the same kind (one unit per element
//!   visited or copied).

use std::cell::Cell;
use std::sync::{Arc, LazyLock};

use ::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use ::cel::common::types::{CelInt, DYN_TYPE};
use ::cel::common::value::{CowVal, Val};
use ::cel::objects::OptionalValue;
use ::cel::{Context, Env, ExecutionError, Value as CelValue};
use serde_json::Value;

use super::Node;
use crate::registry::validation::{child, index, key};
use crate::status::{BadValue, FieldError, FieldErrorType};

mod check;
mod cost;
mod library;
mod values;

/// Upstream's `PerCallLimit`: the most one evaluation of one expression may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream's `RuntimeCELCostBudget`: the most all of one object's rules may cost together.
pub const RUNTIME_COST_BUDGET: u64 = 10_000_000;
/// Upstream's `StaticEstimatedCostLimit`: the most one rule may cost, in the worst case, times
/// the most times its node can appear in an object.
const STATIC_COST_LIMIT: u64 = 10_000_000;
/// Upstream's `StaticEstimatedCRDCostLimit`: the most all of a schema's rules may cost so.
const STATIC_CRD_COST_LIMIT: u64 = 100_000_000;
/// Upstream's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_EXPRESSION_SIZE: usize = 5 * 1024;

/// The function the cost rewrite wraps comprehension ranges in: `(range, weight)`.
const COST_RANGE: &str = "@kapi.cost_range";
/// The function the cost rewrite wraps values read whole in.
const COST_SIZE: &str = "@kapi.cost_size";

/// The environment every rule compiles and runs in: CEL's standard library, the crate's
/// strings and lists extensions, Kubernetes' libraries and the cost functions.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    let added = env
        .add_extension(::cel::extensions::strings)
        .and_then(|()| env.add_extension(::cel::extensions::lists))
        .and_then(|()| env.add_overload(COST_RANGE, "kapi_cost_range", vec![DYN_TYPE, DYN_TYPE], charge_range))
        .and_then(|()| env.add_overload(COST_SIZE, "kapi_cost_size", vec![DYN_TYPE], charge_size))
        .and_then(|()| library::register(&mut env));
    if let Err(e) = added {
        // The declarations are fixed: a conflict is a programming error caught by every test.
        tracing::error!(error = %e, "CEL environment incomplete");
    }
    Arc::new(env)
});

/// `reason`: which kind of field error a failed rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

/// `supportedValidationReason`, sorted as upstream's `sets.String.List()` prints them.
const REASONS: [&str; 4] = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub struct Rule {
    rule: String,
    message: String,
    message_expression: Option<(String, IdedExpr)>,
    reason: Option<Reason>,
    /// `fieldPath` as a field path below the node (`spec.foo`, `a[key]`), when set.
    field_path: Option<Vec<PathPart>>,
    optional_old_self: bool,
    uses_old_self: bool,
    program: IdedExpr,
    /// The estimated worst case, when the rule was type checked (upstream compiles the rules
    /// of the structural part of a schema, not those under `allOf`, `anyOf`, ...).
    cost: Option<Cost>,
}

/// A rule's estimated worst-case cost (upstream's `CompilationResult` figures).
#[derive(Debug, Clone, Copy)]
struct Cost {
    /// `MaxCost`: of one evaluation.
    rule: u64,
    /// `MessageExpressionMaxCost`.
    message: Option<u64>,
    /// `MaxCardinality`: the most times the node can appear in a request, from its
    /// smallest JSON form, used where no `maxItems`/`maxProperties` above bound it.
    cardinality: u64,
}

/// A step of a rule's `fieldPath`.
#[derive(Debug, Clone, PartialEq)]
enum PathPart {
    Child(String),
    Key(String),
}

impl Rule {
    /// The rules of one schema node (`x-kubernetes-validations` at `path`), checked as
    /// upstream's `ValidateCustomResourceDefinitionOpenAPISchema` does: the first problem is
    /// the error, at `path.x-kubernetes-validations[i].<field>`.
    pub(super) fn compile_all(rules: &Value, node: &Node, path: &str) -> Result<Vec<Rule>, FieldError> {
        let rules_path = format!("{path}.x-kubernetes-validations");
        let Some(items) = rules.as_array() else {
            return Err(FieldError::invalid(rules_path, super::bad_value(rules), "must be an array of validation rules"));
        };
        // The declaration `self` has: none under a junctor (upstream does not compile those
        // rules with the schema), and a resource's at the root and at embedded resources.
        let in_junctor = [".allOf[", ".anyOf[", ".oneOf[", ".not."].iter().any(|j| path.contains(j)) || path.ends_with(".not");
        let decl = if in_junctor { None } else { check::decl(node, path == "openAPIV3Schema" || node.embedded_resource) };
        let compiled: Vec<Rule> = items
            .iter()
            .enumerate()
            .map(|(i, rule)| Rule::compile(rule, node, decl.as_ref(), &format!("{rules_path}[{i}]")))
            .collect::<Result<_, _>>()?;
        if decl.is_none() && !in_junctor && !compiled.is_empty() {
            // A node CEL does not see (no type): upstream cannot type its rules.
            return Err(FieldError::internal(
                rules_path,
                "internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
            ));
        }
        Ok(compiled)
    }

    fn compile(json: &Value, node: &Node, decl: Option<&Arc<check::Decl>>, path: &str) -> Result<Rule, FieldError> {
        let text = |field: &str| json.get(field).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (rule, message, message_expression, field_path) = (text("rule"), text("message"), text("messageExpression"), text("fieldPath"));
        let at = |field: &str| format!("{path}.{field}");
        let has_newline = |s: &str| s.contains('\n');
        if rule.trim().is_empty() {
            return Err(FieldError::required(at("rule"), "rule is not specified"));
        } else if !message.is_empty() && message.trim().is_empty() {
            return Err(FieldError::invalid(at("message"), message.as_str(), "must be non-empty if specified"));
        } else if has_newline(message.trim()) {
            return Err(FieldError::invalid(at("message"), message.as_str(), "must not contain line breaks"));
        } else if has_newline(rule.trim()) && message.trim().is_empty() {
            return Err(FieldError::required(at("message"), "message must be specified if rule contains line breaks"));
        }
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            return Err(FieldError::required(at("messageExpression"), "messageExpression must be non-empty if specified"));
        }
        let reason = match json.get("reason").and_then(Value::as_str) {
            None => None,
            Some("FieldValueInvalid") => Some(Reason::Invalid),
            Some("FieldValueForbidden") => Some(Reason::Forbidden),
            Some("FieldValueRequired") => Some(Reason::Required),
            Some("FieldValueDuplicate") => Some(Reason::Duplicate),
            Some(other) => return Err(FieldError::not_supported(at("reason"), other, &REASONS)),
        };
        if !field_path.is_empty() && field_path.trim().is_empty() {
            return Err(FieldError::invalid(at("fieldPath"), field_path.as_str(), "must be non-empty if specified"));
        }
        if has_newline(&field_path) {
            return Err(FieldError::invalid(at("fieldPath"), field_path.as_str(), "must not contain line breaks"));
        }
        let parsed_path = if field_path.is_empty() {
            None
        } else {
            Some(
                parse_field_path(&field_path, node)
                    .map_err(|_| FieldError::invalid(at("fieldPath"), field_path.as_str(), "must be a valid path"))?,
            )
        };
        let optional_old_self = json.get("optionalOldSelf").and_then(Value::as_bool);
        // Upstream shows the whole rule as the bad value: its internal Go struct as JSON.
        let shown = BadValue::Raw(go_rule_json(json));
        let program = parse(&rule).map_err(|detail| {
            FieldError::new(FieldErrorType::Invalid, at("rule"), shown.clone(), format!("compilation failed: {detail}"))
        })?;
        let uses_old_self = references(&program.expr, "oldSelf");
        // `self` and `oldSelf` typed from the node's declaration.
        let vars = decl.map(|decl| {
            let t = check::Ty::of(decl);
            let old = if optional_old_self == Some(true) { check::Ty::Optional(Box::new(t.clone())) } else { t.clone() };
            [("self", t), ("oldSelf", old)]
        });
        let mut cost = None;
        if let (Some(vars), Some(decl)) = (&vars, decl) {
            let checked = check::check(&program.expr, vars);
            if !checked.errors.is_empty() {
                return Err(FieldError::new(
                    FieldErrorType::Invalid,
                    at("rule"),
                    shown,
                    format!("compilation failed: {}", program.issues(&rule, &checked.errors)),
                ));
            }
            if !matches!(checked.type_of(program.expr.id), check::Ty::Bool | check::Ty::Unknown) {
                return Err(FieldError::new(FieldErrorType::Invalid, at("rule"), shown, "cel expression must evaluate to a bool"));
            }
            let cardinality = u64::try_from(check::MAX_REQUEST_SIZE / (decl.min_size + 1)).unwrap_or(0);
            cost = Some(Cost { rule: cost::estimate(&program.expr, &checked, decl), message: None, cardinality });
        } else if program.expr.expr.literal_kind() == Some(false) {
            return Err(FieldError::new(FieldErrorType::Invalid, at("rule"), shown, "cel expression must evaluate to a bool"));
        }
        let message_expression = if message_expression.is_empty() {
            None
        } else {
            let parsed = parse(&message_expression).map_err(|detail| {
                FieldError::new(
                    FieldErrorType::Invalid,
                    at("messageExpression"),
                    shown.clone(),
                    format!("messageExpression compilation failed: {detail}"),
                )
            })?;
            let not_a_string = || {
                FieldError::new(
                    FieldErrorType::Invalid,
                    at("messageExpression"),
                    shown.clone(),
                    "messageExpression must evaluate to a string",
                )
            };
            if let (Some(vars), Some(decl)) = (&vars, decl) {
                let checked = check::check(&parsed.expr, vars);
                if !checked.errors.is_empty() {
                    return Err(FieldError::new(
                        FieldErrorType::Invalid,
                        at("messageExpression"),
                        shown.clone(),
                        format!("messageExpression compilation failed: {}", parsed.issues(&message_expression, &checked.errors)),
                    ));
                }
                if !matches!(checked.type_of(parsed.expr.id), check::Ty::String | check::Ty::Unknown) {
                    return Err(not_a_string());
                }
                if let Some(cost) = &mut cost {
                    cost.message = Some(cost::estimate(&parsed.expr, &checked, decl));
                }
            } else if matches!(parsed.expr.expr, Expr::Literal(ref l) if !matches!(l, LiteralValue::String(_))) {
                return Err(not_a_string());
            }
            Some((message_expression, parsed.rewritten))
        };
        if !uses_old_self && let Some(flag) = optional_old_self {
            return Err(FieldError::invalid(at("optionalOldSelf"), flag, "may not be set if oldSelf is not used in rule"));
        }
        Ok(Rule {
            rule,
            message,
            message_expression,
            reason,
            field_path: parsed_path,
            optional_old_self: optional_old_self == Some(true),
            uses_old_self,
            program: program.rewritten,
            cost,
        })
    }

    /// Whether the rule was type-checked and its cost estimated.
    #[cfg(test)]
    pub(super) fn is_checked(&self) -> bool {
        self.cost.is_some()
    }

    /// `ruleErrorString`: the message, else the rule.
    fn error_string(&self) -> &str {
        if self.message.is_empty() { self.rule.trim() } else { self.message.trim() }
    }
}

/// The first rule reading `oldSelf` where nothing correlates an old value (below the items of a
/// list that is not `x-kubernetes-list-type: map`), as upstream's definition validation
/// refuses it. `path` is `node`'s, `uncorrelatable` the list's where one is above.
pub(super) fn uncorrelatable_old_self(node: &Node, path: &str, uncorrelatable: Option<&str>) -> Option<FieldError> {
    if !node.has_rules {
        return None;
    }
    if let Some(within) = uncorrelatable
        && let Some((i, rule)) = node.rules.iter().enumerate().find(|(_, r)| r.uses_old_self)
    {
        return Some(FieldError::invalid(
            format!("{path}.x-kubernetes-validations[{i}].rule"),
            rule.rule.as_str(),
            format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
        ));
    }
    let properties = node.properties.iter().map(|(name, child)| (child, format!("{path}.properties[{name}]"), uncorrelatable));
    let extra = node.additional_schema().map(|extra| (extra, format!("{path}.additionalProperties"), uncorrelatable));
    let items_within = if node.list_type.as_deref() == Some("map") { uncorrelatable } else { uncorrelatable.or(Some(path)) };
    let items = node.items.as_deref().map(|items| (items, format!("{path}.items"), items_within));
    let all_of = node.all_of.iter().enumerate().map(|(i, a)| (a, format!("{path}.allOf[{i}]"), uncorrelatable));
    properties
        .chain(extra)
        .chain(items)
        .chain(all_of)
        .find_map(|(child, child_path, within)| uncorrelatable_old_self(child, &child_path, within))
}

/// Upstream's static cost checks of a schema's rules at definition write (in
/// `ValidateCustomResourceDefinitionOpenAPISchema` and after it): each rule's estimated cost
/// times the most times its node can appear (`getExpressionCost`) against
/// `StaticEstimatedCostLimit` (unless `per_expression` is off: the version's schema is
/// unchanged by an update), each `messageExpression`'s cost likewise, and their total against
/// `StaticEstimatedCRDCostLimit`. `path` is the schema's (`spec.validation.openAPIV3Schema`).
pub(super) fn cost_errors(root: &Node, path: &str, per_expression: bool) -> Vec<FieldError> {
    let mut total = TotalCost::default();
    let mut errs = Vec::new();
    if root.has_rules {
        cost_walk(root, path, Some(1), per_expression, &mut total, &mut errs);
    }
    if total.total > STATIC_CRD_COST_LIMIT {
        for (at, _) in &total.most_expensive {
            errs.push(FieldError::forbidden(
                at,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        let detail = cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            total.total,
            STATIC_CRD_COST_LIMIT,
        );
        errs.push(FieldError::forbidden(path, detail));
    }
    errs
}

/// Upstream's `TotalCost`: the sum, and the four costliest expressions of at least 1% of the
/// limit.
#[derive(Default)]
struct TotalCost {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl TotalCost {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

/// Walks the schema as upstream's validation does (additionalProperties, properties, items,
/// then the node's own rules), `cardinality` being how many times the node can appear at
/// most (`None`: unbounded, below an array or map without `maxItems`/`maxProperties`).
fn cost_walk(node: &Node, path: &str, cardinality: Option<u64>, per_expression: bool, total: &mut TotalCost, errs: &mut Vec<FieldError>) {
    // Upstream's `extractMaxElements` of this node, for its children.
    let elements = match node.types.as_slice() {
        ["object"] if node.additional_properties.is_some() => node.max_properties.map(|m| u64::try_from(m.max(0)).unwrap_or(0)),
        ["array"] => node.max_items.map(|m| u64::try_from(m.max(0)).unwrap_or(0)),
        _ => Some(1),
    };
    let below = cardinality.zip(elements).map(|(c, e)| c.saturating_mul(e));
    if let Some(extra) = node.additional_schema().filter(|n| n.has_rules) {
        cost_walk(extra, &format!("{path}.additionalProperties"), below, per_expression, total, errs);
    }
    for (name, child) in node.properties.iter().filter(|(_, c)| c.has_rules) {
        cost_walk(child, &format!("{path}.properties[{name}]"), below, per_expression, total, errs);
    }
    if let Some(items) = node.items.as_deref().filter(|n| n.has_rules) {
        cost_walk(items, &format!("{path}.items"), below, per_expression, total, errs);
    }
    for (i, rule) in node.rules.iter().enumerate() {
        let Some(cost) = rule.cost else { continue };
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let expression = if cost.rule == 0 { 0 } else { cost.rule.saturating_mul(cardinality.unwrap_or(cost.cardinality)) };
        if per_expression && expression > STATIC_COST_LIMIT {
            errs.push(FieldError::forbidden(format!("{at}.rule"), cost_message("estimated rule cost", expression, STATIC_COST_LIMIT)));
        }
        total.observe(format!("{at}.rule"), expression);
        if let Some(message) = cost.message {
            if per_expression && message > STATIC_COST_LIMIT {
                let detail = cost_message("estimated messageExpression cost", message, STATIC_COST_LIMIT);
                errs.push(FieldError::forbidden(format!("{at}.messageExpression"), detail));
            }
            total.observe(format!("{at}.messageExpression"), message);
        }
    }
}

/// Upstream's `getCostErrorMessage`.
fn cost_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let shown = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// Upstream's internal `apiextensions.ValidationRule` as `encoding/json` writes it (no JSON
/// tags: Go's field names, every field).
fn go_rule_json(json: &Value) -> String {
    let text = |field: &str| Value::String(json.get(field).and_then(Value::as_str).unwrap_or_default().to_owned());
    let or_null = |field: &str| json.get(field).filter(|v| !v.is_null()).cloned().unwrap_or(Value::Null);
    let fields = [
        ("Rule", text("rule")),
        ("Message", text("message")),
        ("MessageExpression", text("messageExpression")),
        ("Reason", or_null("reason")),
        ("FieldPath", text("fieldPath")),
        ("OptionalOldSelf", or_null("optionalOldSelf")),
    ];
    let mut out = String::from("{");
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("\"{name}\":{}", super::validation::go_json(value)));
    }
    out.push('}');
    out
}

/// Small helpers on the AST.
trait ExprExt {
    /// `Some(is_bool)` for a literal.
    fn literal_kind(&self) -> Option<bool>;
}

impl ExprExt for Expr {
    fn literal_kind(&self) -> Option<bool> {
        match self {
            Expr::Literal(LiteralValue::Boolean(_)) => Some(true),
            Expr::Literal(_) | Expr::List(_) | Expr::Map(_) => Some(false),
            _ => None,
        }
    }
}

/// A parsed expression: as written (for references and checking), as rewritten with the
/// cost charges, and where each of its expressions sits in the source.
struct Parsed {
    expr: IdedExpr,
    rewritten: IdedExpr,
    program: ::cel::Program,
}

impl Parsed {
    /// cel-go's issues text for `errors` (by expression id), sorted by position.
    fn issues(&self, source: &str, errors: &[(u64, String)]) -> String {
        let mut located: Vec<((usize, usize), &str)> = errors
            .iter()
            .map(|(id, message)| {
                let offset = self.program.source_info().offset_for(*id).map_or(0, |(start, _)| start as usize);
                (position(source, offset), message.as_str())
            })
            .collect();
        located.sort_by_key(|(at, _)| *at);
        located.iter().map(|((line, column), message)| issue(source, *line, *column, message)).collect::<Vec<_>>().join("\n")
    }
}

/// One of cel-go's issues: where, what, and the source line marked.
fn issue(source: &str, line: usize, column: usize, message: &str) -> String {
    let snippet = source.lines().nth(line - 1).unwrap_or_default();
    format!("ERROR: <input>:{line}:{column}: {message}\n | {snippet}\n | {:.>column$}", "^")
}

/// Parses `source` and checks its identifiers. The error is cel-go's issue text.
fn parse(source: &str) -> Result<Parsed, String> {
    let program = ENV.compile(source).map_err(|e| e.to_string())?;
    let expr = program.expression().clone();
    let mut scope = Vec::new();
    if let Some((id, name)) = undeclared(&expr, &mut scope) {
        let (line, column) = position(source, program.source_info().offset_for(id).map_or(0, |(start, _)| start as usize));
        return Err(issue(source, line, column, &format!("undeclared reference to '{name}' (in container '')")));
    }
    let mut next_id = max_id(&expr) + 1;
    let mut rewritten = expr.clone();
    charge(&mut rewritten, &mut next_id, false);
    Ok(Parsed { expr, rewritten, program })
}

/// The line (1-based) and column (1-based) of a byte offset.
fn position(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Names an expression may use without declaring them: the variables, and the type and
/// namespace names of the libraries.
const DECLARED: [&str; 21] = [
    "self",
    "oldSelf",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "optional",
    "strings",
    "sets",
    "math",
    "base64",
    "lists",
    "format",
    "ip",
];

/// The first identifier that is neither declared nor a comprehension's variable in scope.
fn undeclared<'e>(expr: &'e IdedExpr, scope: &mut Vec<&'e str>) -> Option<(u64, &'e str)> {
    match &expr.expr {
        Expr::Ident(name) => (!DECLARED.contains(&name.as_str()) && !scope.contains(&name.as_str()) && !name.starts_with('@'))
            .then_some((expr.id, name.as_str())),
        Expr::Call(call) => {
            // A namespaced function (`optional.none()`, `strings.quote(s)`) names its namespace
            // as its target.
            call.target.as_deref().and_then(|t| undeclared(t, scope)).or_else(|| call.args.iter().find_map(|a| undeclared(a, scope)))
        }
        Expr::Comprehension(c) => {
            let found = undeclared(&c.iter_range, scope).or_else(|| undeclared(&c.accu_init, scope));
            if found.is_some() {
                return found;
            }
            let depth = scope.len();
            scope.push(&c.iter_var);
            if let Some(v2) = &c.iter_var2 {
                scope.push(v2);
            }
            scope.push(&c.accu_var);
            let found =
                undeclared(&c.loop_cond, scope).or_else(|| undeclared(&c.loop_step, scope)).or_else(|| undeclared(&c.result, scope));
            scope.truncate(depth);
            found
        }
        Expr::List(list) => list.elements.iter().find_map(|e| undeclared(e, scope)),
        Expr::Map(map) => map.entries.iter().find_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => undeclared(&m.key, scope).or_else(|| undeclared(&m.value, scope)),
            EntryExpr::StructField(f) => undeclared(&f.value, scope),
        }),
        Expr::Struct(s) => s.entries.iter().find_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => undeclared(&m.key, scope).or_else(|| undeclared(&m.value, scope)),
            EntryExpr::StructField(f) => undeclared(&f.value, scope),
        }),
        Expr::Select(select) => undeclared(&select.operand, scope),
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}

/// Whether `expr` reads the variable `name` (not shadowed by a comprehension).
fn references(expr: &IdedExpr, name: &str) -> bool {
    let mut found = false;
    visit(expr, &mut |e| found |= matches!(&e.expr, Expr::Ident(n) if n == name));
    found
}

fn visit(expr: &IdedExpr, f: &mut impl FnMut(&IdedExpr)) {
    f(expr);
    match &expr.expr {
        Expr::Call(call) => {
            if let Some(t) = &call.target {
                visit(t, f);
            }
            call.args.iter().for_each(|a| visit(a, f));
        }
        Expr::Comprehension(c) => {
            for e in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                visit(e, f);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(|e| visit(e, f)),
        Expr::Map(map) => map.entries.iter().for_each(|e| visit_entry(&e.expr, f)),
        Expr::Struct(s) => s.entries.iter().for_each(|e| visit_entry(&e.expr, f)),
        Expr::Select(select) => visit(&select.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn visit_entry(entry: &EntryExpr, f: &mut impl FnMut(&IdedExpr)) {
    match entry {
        EntryExpr::MapEntry(m) => {
            visit(&m.key, f);
            visit(&m.value, f);
        }
        EntryExpr::StructField(s) => visit(&s.value, f),
    }
}

fn max_id(expr: &IdedExpr) -> u64 {
    let mut max = 0;
    visit(expr, &mut |e| max = max.max(e.id));
    max
}

fn node_count(expr: &IdedExpr) -> u64 {
    let mut n = 0;
    visit(expr, &mut |_| n += 1);
    n
}

/// Replaces `expr` by a call of `name` on it (and on `weight`).
fn wrap(expr: &mut IdedExpr, next_id: &mut u64, name: &str, weight: Option<i64>) {
    let inner = std::mem::take(expr);
    let mut args = vec![inner];
    if let Some(weight) = weight {
        args.push(IdedExpr { id: *next_id, expr: Expr::Literal(LiteralValue::Int(CelInt::from(weight))) });
        *next_id += 1;
    }
    *expr = IdedExpr { id: *next_id, expr: Expr::Call(CallExpr { func_name: name.to_owned(), target: None, args }) };
    *next_id += 1;
}

/// Rewrites `expr` with the cost charges (see the module's doc). `operand` is set for the
/// operand of a field selection, which is navigated, not copied.
fn charge(expr: &mut IdedExpr, next_id: &mut u64, operand: bool) {
    match &mut expr.expr {
        Expr::Ident(_) => {
            if !operand {
                wrap(expr, next_id, COST_SIZE, None);
            }
        }
        Expr::Select(select) => {
            let test = select.test;
            charge(&mut select.operand, next_id, true);
            if !operand && !test {
                wrap(expr, next_id, COST_SIZE, None);
            }
        }
        Expr::Call(call) => {
            // A receiver is handed over, not copied (and may name a namespace: `sets.contains`).
            if let Some(t) = &mut call.target {
                charge(t, next_id, true);
            }
            for a in &mut call.args {
                charge(a, next_id, false);
            }
            if call.func_name == "_+_" {
                wrap(expr, next_id, COST_SIZE, None);
            }
        }
        Expr::Comprehension(c) => {
            let weight = i64::try_from(node_count(&c.loop_cond) + node_count(&c.loop_step) + 1).unwrap_or(i64::MAX);
            // The accumulator is the macros' bookkeeping, not charged as a copy (and the
            // interpreter recognises `map` and `filter` by its reads, to append in place).
            charge(&mut c.accu_init, next_id, false);
            for e in [&mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                charge_skipping(e, next_id, &c.accu_var);
            }
            charge(&mut c.iter_range, next_id, false);
            wrap(&mut c.iter_range, next_id, COST_RANGE, Some(weight));
        }
        Expr::List(list) => list.elements.iter_mut().for_each(|e| charge(e, next_id, false)),
        Expr::Map(map) => map.entries.iter_mut().for_each(|e| charge_entry(&mut e.expr, next_id)),
        Expr::Struct(s) => s.entries.iter_mut().for_each(|e| charge_entry(&mut e.expr, next_id)),
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// [`charge`], except for reads of the comprehension's accumulator `accu` (the macros'
/// own bookkeeping).
fn charge_skipping(expr: &mut IdedExpr, next_id: &mut u64, accu: &str) {
    match &mut expr.expr {
        Expr::Ident(name) if name == accu => {}
        Expr::Call(call)
            if call.func_name == "_+_" && call.args.first().is_some_and(|a| matches!(&a.expr, Expr::Ident(n) if n == accu)) =>
        {
            // `accu + [x]` (`map`, `filter`): charge only what is appended.
            for a in call.args.iter_mut().skip(1) {
                charge(a, next_id, false);
            }
        }
        Expr::Call(call) => {
            if let Some(t) = &mut call.target {
                charge_skipping(t, next_id, accu);
            }
            for a in &mut call.args {
                charge_skipping(a, next_id, accu);
            }
            if call.func_name == "_+_" {
                wrap(expr, next_id, COST_SIZE, None);
            }
        }
        _ => charge(expr, next_id, false),
    }
}

fn charge_entry(entry: &mut EntryExpr, next_id: &mut u64) {
    match entry {
        EntryExpr::MapEntry(m) => {
            charge(&mut m.key, next_id, false);
            charge(&mut m.value, next_id, false);
        }
        EntryExpr::StructField(s) => charge(&mut s.value, next_id, false),
    }
}

// ---------------------------------------------------------------------------------------------
// Cost accounting.

thread_local! {
    /// What the evaluation running on this thread has cost so far, and its limit.
    static COST: Cell<(u64, u64)> = const { Cell::new((0, u64::MAX)) };
}

/// Adds `units` to the running evaluation's cost; an error once past its limit.
fn spend(units: u64) -> Result<(), ExecutionError> {
    COST.with(|cost| {
        let (spent, limit) = cost.get();
        let spent = spent.saturating_add(units);
        cost.set((spent, limit));
        if spent > limit { Err(ExecutionError::function_error("cost", COST_EXCEEDED)) } else { Ok(()) }
    })
}

/// cel-go's error for an evaluation past its cost limit.
const COST_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// How many elements a value holds, through all its levels (strings count their bytes / 16).
fn deep_size(value: &dyn Val) -> u64 {
    if let Some(iterable) = value.as_iterable() {
        let indexer = value.as_indexer();
        let mut total = 1u64;
        let mut items = iterable.iter();
        while let Some(item) = items.next() {
            total = total.saturating_add(deep_size(item));
            // A map iterates its keys: count the values too.
            if let Some(indexer) = indexer
                && value.get_type().name() == "map"
                && let Ok(v) = indexer.get(item)
            {
                total = total.saturating_add(deep_size(v.as_ref()));
            }
        }
        total
    } else if let Some(s) = value.downcast_ref::<::cel::common::types::CelString>() {
        1 + s.inner().len() as u64 / 16
    } else {
        1
    }
}

fn charge_range<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let weight = args.get(1).and_then(|w| w.as_ref().downcast_ref::<CelInt>()).map_or(1, |w| *w.inner());
    let size = args.first().and_then(|r| r.as_sizer()).map_or(1, |s| *s.size().inner());
    spend(u64::try_from(size.max(1)).unwrap_or(u64::MAX).saturating_mul(u64::try_from(weight.max(1)).unwrap_or(u64::MAX)))?;
    args.truncate(1);
    args.pop().ok_or_else(ExecutionError::missing_argument_or_target)
}

fn charge_size<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let value = args.pop().ok_or_else(ExecutionError::missing_argument_or_target)?;
    spend(deep_size(value.as_ref()))?;
    Ok(value)
}

/// How one evaluation ended.
enum Outcome {
    Value(CelValue),
    Error(String),
    /// Past the per-call limit.
    OverCallLimit,
    /// Past what is left of the object's budget.
    OverBudget,
}

/// Evaluates `program` with `vars`, charging `budget`.
fn evaluate(program: &IdedExpr, vars: &Vars, budget: &mut u64) -> Outcome {
    let limit = PER_CALL_LIMIT.min(*budget);
    COST.with(|cost| cost.set((0, limit)));
    let result = spend(node_count(program)).and_then(|()| {
        let mut context = Context::with_env(Arc::clone(&ENV));
        context.add_variable_from_value("self", vars.self_value.clone());
        match &vars.old_self {
            OldSelf::Absent => {}
            OldSelf::Value(v) => context.add_variable_from_value("oldSelf", v.clone()),
            OldSelf::Optional(v) => context.add_variable_from_value(
                "oldSelf",
                CelValue::Opaque(Arc::new(match v {
                    Some(v) => OptionalValue::of(v.clone()),
                    None => OptionalValue::none(),
                })),
            ),
        }
        CelValue::resolve(program, &context)
    });
    let (spent, _) = COST.with(|cost| cost.replace((0, u64::MAX)));
    if spent > limit {
        return if limit < PER_CALL_LIMIT { Outcome::OverBudget } else { Outcome::OverCallLimit };
    }
    *budget -= spent;
    match result {
        Ok(value) => Outcome::Value(value),
        Err(e) => Outcome::Error(error_text(&e)),
    }
}

/// An evaluation error as cel-go words the common ones.
fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload(o) => format!("no such overload: {o}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {i:?}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The variables of one node's rules.
struct Vars {
    self_value: CelValue,
    old_self: OldSelf,
}

enum OldSelf {
    /// Create, or nothing correlates: rules reading `oldSelf` are skipped.
    Absent,
    Value(CelValue),
    /// `optionalOldSelf: true`: an optional, empty without an old value.
    Optional(Option<CelValue>),
}

// ---------------------------------------------------------------------------------------------
// Evaluation over an object.

/// The old value a node is compared with on update (upstream's `CorrelatedObject`).
#[derive(Clone, Copy)]
pub(super) struct Old<'a> {
    value: Option<&'a Value>,
    /// The node's value equals the old one, or (where nothing correlates) its nearest
    /// correlated parent's did: failing rules that do not read `oldSelf` are not errors
    /// (ratcheting).
    unchanged: bool,
}

impl<'a> Old<'a> {
    pub(super) fn of(new: &Value, old: Option<&'a Value>) -> Old<'a> {
        Old { value: old, unchanged: old == Some(new) }
    }
}

/// Evaluates every rule of `root`'s tree on `object` (`old` on update), appending the
/// failures to `errs`, as upstream's `Validator.Validate` does with `RuntimeCELCostBudget`.
/// `path` is where `object` sits (`""` at the resource's root, whose errors upstream reports
/// at `<nil>`). `resource_root` is set at the root of a resource (its `metadata` is reduced to
/// `name` and `generateName`).
pub(super) fn validate(root: &Node, object: &Value, old: Option<Old<'_>>, path: &str, resource_root: bool) -> Vec<FieldError> {
    let mut walk = Walk { errs: Vec::new(), budget: RUNTIME_COST_BUDGET, stopped: false };
    walk.node(root, root, object, old, path, resource_root);
    walk.errs
}

struct Walk {
    errs: Vec<FieldError>,
    budget: u64,
    stopped: bool,
}

impl Walk {
    fn node(&mut self, rules: &Node, shape: &Node, value: &Value, old: Option<Old<'_>>, path: &str, resource_root: bool) {
        if self.stopped || value.is_null() || !rules.has_rules {
            return;
        }
        if !rules.rules.is_empty() {
            self.rules(rules, shape, value, old, path, resource_root);
        }
        for all_of in &rules.all_of {
            // `allOf` rules see the same value, correlated as their node's.
            self.node(all_of, shape, value, old, path, resource_root);
        }
        match value {
            Value::Object(fields) => {
                for (name, field) in fields {
                    let old_field = old.map(|o| Old::of(field, o.value.and_then(|v| v.get(name))));
                    if let (Some(rule_child), Some(shape_child)) = (rules.properties.get(name), shape.properties.get(name)) {
                        self.node(rule_child, shape_child, field, old_field, &child(path, name), shape_child.embedded_resource);
                    } else if let (Some(rule_extra), Some(shape_extra)) = (rules.additional_schema(), shape.additional_schema())
                        && !shape.properties.contains_key(name)
                    {
                        self.node(rule_extra, shape_extra, field, old_field, &key(path, name), shape_extra.embedded_resource);
                    }
                }
            }
            Value::Array(items) => {
                let (Some(rule_items), Some(shape_items)) = (&rules.items, &shape.items) else { return };
                for (i, item) in items.iter().enumerate() {
                    let old_item = old.map(|o| match (shape.list_type.as_deref(), o.value.and_then(Value::as_array)) {
                        (Some("map"), Some(old_items)) => Old::of(item, correlate_map_item(item, old_items, &shape.list_map_keys)),
                        // Nothing correlates in other lists: the list's own equality decides.
                        _ => Old { value: None, unchanged: o.unchanged },
                    });
                    self.node(rule_items, shape_items, item, old_item, &index(path, i), shape_items.embedded_resource);
                }
            }
            _ => {}
        }
    }

    fn rules(&mut self, rules: &Node, shape: &Node, value: &Value, old: Option<Old<'_>>, path: &str, resource_root: bool) {
        // Upstream's `Structural.Type`: none for int-or-string.
        let type_name = if let [only] = shape.types.as_slice() { *only } else { "" };
        let shown_path = if path.is_empty() { "<nil>" } else { path };
        if self.budget == 0 {
            self.out_of_budget(shown_path, type_name);
            return;
        }
        let self_value = values::to_cel(value, Some(shape), resource_root);
        let old_value = old.and_then(|o| o.value).filter(|v| !v.is_null());
        let old_cel = old_value.map(|v| values::to_cel(v, Some(shape), resource_root));
        for rule in &rules.rules {
            let old_self = match (&old_cel, rule.uses_old_self, rule.optional_old_self) {
                (_, _, true) => OldSelf::Optional(old_cel.clone()),
                (None, true, false) => continue,
                (Some(v), true, false) => OldSelf::Value(v.clone()),
                (_, false, false) => OldSelf::Absent,
            };
            let vars = Vars { self_value: self_value.clone(), old_self };
            let passed = match evaluate(&rule.program, &vars, &mut self.budget) {
                Outcome::Value(CelValue::Bool(passed)) => passed,
                Outcome::Value(other) => {
                    let detail = format!("no such overload: rule evaluated to {:?}, not a bool", other.type_of());
                    self.errs.push(FieldError::invalid(
                        shown_path,
                        type_name,
                        format!("{detail} evaluating rule: {}", rule.error_string()),
                    ));
                    continue;
                }
                Outcome::Error(e) if e.starts_with("no such overload") => {
                    self.errs.push(FieldError::invalid(
                        shown_path,
                        type_name,
                        format!(
                            "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule.error_string()
                        ),
                    ));
                    continue;
                }
                Outcome::Error(e) => {
                    self.errs.push(FieldError::invalid(shown_path, type_name, format!("{e} evaluating rule: {}", rule.error_string())));
                    continue;
                }
                Outcome::OverCallLimit => {
                    self.errs.push(FieldError::invalid(
                        shown_path,
                        type_name,
                        format!(
                            "'{COST_EXCEEDED}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                            rule.error_string()
                        ),
                    ));
                    self.stopped = true;
                    return;
                }
                Outcome::OverBudget => {
                    self.out_of_budget(shown_path, type_name);
                    return;
                }
            };
            if passed {
                continue;
            }
            let field = match &rule.field_path {
                None => shown_path.to_owned(),
                Some(parts) => parts.iter().fold(path.to_owned(), |p, part| match part {
                    PathPart::Child(name) => child(&p, name),
                    PathPart::Key(k) => key(&p, k),
                }),
            };
            let mut detail = None;
            if let Some((source, program)) = &rule.message_expression {
                let vars = Vars { self_value: self_value.clone(), old_self: OldSelf::Absent };
                let vars = match (&old_cel, rule.uses_old_self) {
                    (Some(v), true) => Vars { old_self: OldSelf::Value(v.clone()), ..vars },
                    _ => vars,
                };
                match evaluate(program, &vars, &mut self.budget) {
                    Outcome::Value(CelValue::String(s)) => {
                        let trimmed = s.trim();
                        if !trimmed.is_empty() && trimmed.len() <= MAX_MESSAGE_EXPRESSION_SIZE && !trimmed.contains('\n') {
                            detail = Some(trimmed.to_owned());
                        }
                    }
                    Outcome::Value(_) | Outcome::Error(_) => {}
                    Outcome::OverCallLimit => {
                        self.push(
                            rule,
                            old,
                            FieldError::invalid(
                                field,
                                type_name,
                                format!(
                                    "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                                    crate::status::go_quote(source)
                                ),
                            ),
                        );
                        self.stopped = true;
                        return;
                    }
                    Outcome::OverBudget => {
                        self.push(rule, old, FieldError::invalid(field, type_name,
                            "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"));
                        self.stopped = true;
                        return;
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| {
                if rule.message.is_empty() { format!("failed rule: {}", rule.error_string()) } else { rule.message.trim().to_owned() }
            });
            // Objects and lists are not shown (upstream's `OmitValueType`); scalars are.
            let shown = if matches!(type_name, "object" | "array") { BadValue::Omitted } else { super::bad_value(value) };
            let error = match rule.reason {
                None | Some(Reason::Invalid) => FieldError::new(FieldErrorType::Invalid, field, shown, detail),
                Some(Reason::Forbidden) => FieldError::forbidden(field, detail),
                Some(Reason::Required) => FieldError::required(field, detail),
                Some(Reason::Duplicate) => FieldError::new(FieldErrorType::Duplicate, field, shown, ""),
            };
            self.push(rule, old, error);
        }
    }

    /// A failed rule's error, unless ratcheting lets it pass (upstream warns instead).
    fn push(&mut self, rule: &Rule, old: Option<Old<'_>>, error: FieldError) {
        if !rule.uses_old_self && old.is_some_and(|o| o.unchanged) {
            return;
        }
        self.errs.push(error);
    }

    fn out_of_budget(&mut self, path: &str, type_name: &str) {
        self.errs.push(FieldError::invalid(
            path,
            type_name,
            "validation failed due to running out of cost budget, no further validation rules will be run",
        ));
        self.stopped = true;
    }
}

/// The old item of a `x-kubernetes-list-type: map` list with the same keys as `item`.
fn correlate_map_item<'a>(item: &Value, old_items: &'a [Value], keys: &[String]) -> Option<&'a Value> {
    old_items.iter().find(|old| keys.iter().all(|k| old.get(k) == item.get(k)))
}

/// Upstream's `ValidFieldPath`: `.a.b`, `['a.b']`, map keys, against the node's schema.
fn parse_field_path(path: &str, node: &Node) -> Result<Vec<PathPart>, ()> {
    let mut parts = Vec::new();
    let mut schema = node;
    let mut rest = path;
    while !rest.is_empty() {
        let name = if let Some(after) = rest.strip_prefix("['") {
            let mut name = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next().ok_or(())? {
                    (_, '\\') => match chars.next().ok_or(())?.1 {
                        'n' => name.push('\n'),
                        't' => name.push('\t'),
                        'r' => name.push('\r'),
                        '\'' => name.push('\''),
                        '\\' => name.push('\\'),
                        _ => return Err(()),
                    },
                    (i, '\'') => break i,
                    (_, c) => name.push(c),
                }
            };
            rest = after[end + 1..].strip_prefix(']').ok_or(())?;
            name
        } else if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return Err(());
            }
            rest = &after[end..];
            after[..end].to_owned()
        } else {
            return Err(());
        };
        if !schema.properties.is_empty() {
            schema = schema.properties.get(&name).ok_or(())?;
            parts.push(PathPart::Child(name));
        } else if let Some(extra) = schema.additional_schema() {
            schema = extra;
            parts.push(PathPart::Key(name));
        } else {
            return Err(());
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests;
