//! The parts of Kubernetes' CEL libraries (`k8s.io/apiserver/pkg/cel/library`, cel-go's
//! `ext.Sets`) the `cel` crate does not have: Kubernetes' lists library (`isSorted`, `sum`,
//! `min`, `max`, `indexOf`, `lastIndexOf`), the regex library (`find`, `findAll`), the sets
//! library (`sets.contains`, `sets.equivalent`, `sets.intersects`), `isQuantity` and
//! `quantity()` with its comparisons, conversions and arithmetic (`isLessThan`,
//! `isGreaterThan`, `compareTo`, `sign`, `isInteger`, `asInteger`, `asApproximateFloat`,
//! `add`, `sub`); and in submodules the IP and CIDR library ([`net`]), the URL library
//! ([`urls`]), the semver library ([`semver`]) and the named formats ([`format`]).
//! Durations and timestamps are the crate's own.

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use ::cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE, Type};
use ::cel::objects::Opaque;
use ::cel::{DeclarationError, Env, ExecutionError, Value as CelValue};
use kapi_apimachinery::quantity::Quantity;
use regex::Regex;

/// An overload written on `Value`s: its arguments (the target first) converted, its result
/// converted back.
macro_rules! on_values {
    ($name:ident, $imp:path) => {
        fn $name<'b, 'v>(
            args: Vec<::cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<::cel::common::value::CowVal<'b, 'v>, ::cel::ExecutionError> {
            let values = args.iter().map(|a| ::cel::Value::try_from(a.as_ref())).collect::<Result<Vec<_>, _>>()?;
            let out = $imp(&values)?;
            Ok(::cel::common::value::CowVal::Owned(Box::<dyn ::cel::common::value::Val>::try_from(out)?))
        }
    };
}

mod format;
mod net;
mod semver;
mod urls;

on_values!(is_sorted_fn, is_sorted);
on_values!(sum_fn, sum);
on_values!(min_fn, min);
on_values!(max_fn, max);
on_values!(index_of_fn, index_of);
on_values!(last_index_of_fn, last_index_of);
on_values!(find_fn, find);
on_values!(find_all_fn, find_all);
on_values!(find_all_n_fn, find_all_n);
on_values!(sets_contains_fn, sets_contains);
on_values!(sets_equivalent_fn, sets_equivalent);
on_values!(sets_intersects_fn, sets_intersects);
on_values!(is_quantity_fn, is_quantity);
on_values!(quantity_fn, quantity);
on_values!(is_less_than_fn, is_less_than);
on_values!(is_greater_than_fn, is_greater_than);
on_values!(compare_to_fn, compare_to);
on_values!(sign_fn, sign);
on_values!(is_integer_fn, is_integer);
on_values!(as_integer_fn, as_integer);
on_values!(as_approximate_float_fn, as_approximate_float);
on_values!(add_fn, add);
on_values!(sub_fn, sub);

/// The CEL type of `quantity()` values.
fn quantity_type() -> Type {
    Type::new_opaque_type("kubernetes.Quantity")
}

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "kapi_list_is_sorted", LIST_TYPE, vec![], is_sorted_fn)?;
    env.add_member_overload("sum", "kapi_list_sum", LIST_TYPE, vec![], sum_fn)?;
    env.add_member_overload("min", "kapi_list_min", LIST_TYPE, vec![], min_fn)?;
    env.add_member_overload("max", "kapi_list_max", LIST_TYPE, vec![], max_fn)?;
    env.add_member_overload("indexOf", "kapi_list_index_of", LIST_TYPE, vec![DYN_TYPE], index_of_fn)?;
    env.add_member_overload("lastIndexOf", "kapi_list_last_index_of", LIST_TYPE, vec![DYN_TYPE], last_index_of_fn)?;
    env.add_member_overload("find", "kapi_string_find", STRING_TYPE, vec![STRING_TYPE], find_fn)?;
    env.add_member_overload("findAll", "kapi_string_find_all", STRING_TYPE, vec![STRING_TYPE], find_all_fn)?;
    env.add_member_overload("findAll", "kapi_string_find_all_n", STRING_TYPE, vec![STRING_TYPE, INT_TYPE], find_all_n_fn)?;
    env.add_overload("sets.contains", "kapi_sets_contains", vec![LIST_TYPE, LIST_TYPE], sets_contains_fn)?;
    env.add_overload("sets.equivalent", "kapi_sets_equivalent", vec![LIST_TYPE, LIST_TYPE], sets_equivalent_fn)?;
    env.add_overload("sets.intersects", "kapi_sets_intersects", vec![LIST_TYPE, LIST_TYPE], sets_intersects_fn)?;
    env.add_overload("isQuantity", "kapi_is_quantity", vec![STRING_TYPE], is_quantity_fn)?;
    env.add_overload("quantity", "kapi_quantity", vec![STRING_TYPE], quantity_fn)?;
    let quantity: fn() -> Type = quantity_type;
    let version: fn() -> Type = semver::semver_type;
    for (kind, t) in [("quantity", quantity), ("semver", version)] {
        let id = |name: &str| format!("kapi_{kind}_{name}");
        env.add_member_overload("isLessThan", &id("is_less_than"), t(), vec![t()], is_less_than_fn)?;
        env.add_member_overload("isGreaterThan", &id("is_greater_than"), t(), vec![t()], is_greater_than_fn)?;
        env.add_member_overload("compareTo", &id("compare_to"), t(), vec![t()], compare_to_fn)?;
    }
    let q = quantity_type;
    // Upstream declares `sign` as a global function; `q.sign()` is kept as well.
    env.add_overload("sign", "kapi_quantity_sign_global", vec![q()], sign_fn)?;
    env.add_member_overload("sign", "kapi_quantity_sign", q(), vec![], sign_fn)?;
    env.add_member_overload("isInteger", "kapi_quantity_is_integer", q(), vec![], is_integer_fn)?;
    env.add_member_overload("asInteger", "kapi_quantity_as_integer", q(), vec![], as_integer_fn)?;
    env.add_member_overload("asApproximateFloat", "kapi_quantity_as_float", q(), vec![], as_approximate_float_fn)?;
    env.add_member_overload("add", "kapi_quantity_add", q(), vec![q()], add_fn)?;
    env.add_member_overload("add", "kapi_quantity_add_int", q(), vec![INT_TYPE], add_fn)?;
    env.add_member_overload("sub", "kapi_quantity_sub", q(), vec![q()], sub_fn)?;
    env.add_member_overload("sub", "kapi_quantity_sub_int", q(), vec![INT_TYPE], sub_fn)?;
    net::register(env)?;
    urls::register(env)?;
    semver::register(env)?;
    format::register(env)?;
    Ok(())
}

type Answer<T> = Result<T, ExecutionError>;

fn list<'a>(values: &'a [CelValue], i: usize, function: &str) -> Answer<&'a [CelValue]> {
    match values.get(i) {
        Some(CelValue::List(items)) => Ok(items.as_slice()),
        _ => Err(ExecutionError::function_error(function, "expected a list")),
    }
}

fn text<'a>(values: &'a [CelValue], i: usize, function: &str) -> Answer<&'a str> {
    match values.get(i) {
        Some(CelValue::String(s)) => Ok(s.as_str()),
        _ => Err(ExecutionError::function_error(function, "expected a string")),
    }
}

fn compare(a: &CelValue, b: &CelValue, function: &str) -> Answer<Ordering> {
    a.partial_cmp(b).ok_or_else(|| ExecutionError::function_error(function, "list elements are not comparable"))
}

fn is_sorted(values: &[CelValue]) -> Answer<CelValue> {
    let items = list(values, 0, "isSorted")?;
    for pair in items.windows(2) {
        if compare(&pair[0], &pair[1], "isSorted")? == Ordering::Greater {
            return Ok(CelValue::Bool(false));
        }
    }
    Ok(CelValue::Bool(true))
}

fn sum(values: &[CelValue]) -> Answer<CelValue> {
    let items = list(values, 0, "sum")?;
    let overflow = || ExecutionError::function_error("sum", "integer overflow");
    match items.first() {
        None => Ok(CelValue::Int(0)),
        Some(CelValue::Int(_)) => items
            .iter()
            .try_fold(0i64, |acc, v| match v {
                CelValue::Int(i) => acc.checked_add(*i).ok_or_else(overflow),
                _ => Err(ExecutionError::function_error("sum", "mixed list")),
            })
            .map(CelValue::Int),
        Some(CelValue::UInt(_)) => items
            .iter()
            .try_fold(0u64, |acc, v| match v {
                CelValue::UInt(u) => acc.checked_add(*u).ok_or_else(overflow),
                _ => Err(ExecutionError::function_error("sum", "mixed list")),
            })
            .map(CelValue::UInt),
        Some(CelValue::Float(_)) => items
            .iter()
            .try_fold(0f64, |acc, v| match v {
                CelValue::Float(f) => Ok(acc + f),
                _ => Err(ExecutionError::function_error("sum", "mixed list")),
            })
            .map(CelValue::Float),
        Some(_) => Err(ExecutionError::function_error("sum", "expected a list of numbers")),
    }
}

fn extreme(values: &[CelValue], function: &str, want: Ordering) -> Answer<CelValue> {
    let items = list(values, 0, function)?;
    let mut best = items.first().ok_or_else(|| ExecutionError::function_error(function, format!("{function} called on empty list")))?;
    for item in &items[1..] {
        if compare(item, best, function)? == want {
            best = item;
        }
    }
    Ok(best.clone())
}

fn min(values: &[CelValue]) -> Answer<CelValue> {
    extreme(values, "min", Ordering::Less)
}

fn max(values: &[CelValue]) -> Answer<CelValue> {
    extreme(values, "max", Ordering::Greater)
}

fn index_of(values: &[CelValue]) -> Answer<CelValue> {
    let items = list(values, 0, "indexOf")?;
    let found = values.get(1).and_then(|needle| items.iter().position(|v| v == needle));
    Ok(CelValue::Int(found.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX))))
}

fn last_index_of(values: &[CelValue]) -> Answer<CelValue> {
    let items = list(values, 0, "lastIndexOf")?;
    let found = values.get(1).and_then(|needle| items.iter().rposition(|v| v == needle));
    Ok(CelValue::Int(found.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX))))
}

fn regex(values: &[CelValue], function: &str) -> Answer<Regex> {
    Regex::new(text(values, 1, function)?).map_err(|e| ExecutionError::function_error(function, e))
}

fn find(values: &[CelValue]) -> Answer<CelValue> {
    let re = regex(values, "find")?;
    let found = re.find(text(values, 0, "find")?).map_or("", |m| m.as_str());
    Ok(CelValue::String(Arc::new(found.to_owned())))
}

fn find_all_limited(values: &[CelValue], limit: Option<i64>) -> Answer<CelValue> {
    let re = regex(values, "findAll")?;
    let haystack = text(values, 0, "findAll")?;
    let limit = match limit {
        Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let found = re.find_iter(haystack).take(limit).map(|m| CelValue::String(Arc::new(m.as_str().to_owned()))).collect();
    Ok(CelValue::List(Arc::new(found)))
}

fn find_all(values: &[CelValue]) -> Answer<CelValue> {
    find_all_limited(values, None)
}

fn find_all_n(values: &[CelValue]) -> Answer<CelValue> {
    match values.get(2) {
        Some(CelValue::Int(n)) => find_all_limited(values, Some(*n)),
        _ => Err(ExecutionError::function_error("findAll", "expected an int")),
    }
}

fn sets_contains(values: &[CelValue]) -> Answer<CelValue> {
    let (a, b) = (list(values, 0, "sets.contains")?, list(values, 1, "sets.contains")?);
    Ok(CelValue::Bool(b.iter().all(|x| a.contains(x))))
}

fn sets_equivalent(values: &[CelValue]) -> Answer<CelValue> {
    let (a, b) = (list(values, 0, "sets.equivalent")?, list(values, 1, "sets.equivalent")?);
    Ok(CelValue::Bool(b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x))))
}

fn sets_intersects(values: &[CelValue]) -> Answer<CelValue> {
    let (a, b) = (list(values, 0, "sets.intersects")?, list(values, 1, "sets.intersects")?);
    Ok(CelValue::Bool(a.iter().any(|x| b.contains(x))))
}

/// apimachinery's quantity grammar: a signed decimal number and a binary-SI, decimal-SI or
/// decimal-exponent suffix.
static QUANTITY: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$").ok());

fn is_quantity(values: &[CelValue]) -> Answer<CelValue> {
    let s = text(values, 0, "isQuantity")?;
    Ok(CelValue::Bool(QUANTITY.as_ref().is_some_and(|q| q.is_match(s))))
}

/// A `quantity()`: apimachinery's `resource.Quantity`, equal and ordered by value.
#[derive(PartialEq, Eq)]
struct QuantityVal(Quantity);

impl std::fmt::Debug for QuantityVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "quantity({})", self.0.as_str())
    }
}

impl Opaque for QuantityVal {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

fn quantity(values: &[CelValue]) -> Answer<CelValue> {
    let s = text(values, 0, "quantity")?;
    let q = Quantity::parse(s).map_err(|e| ExecutionError::function_error("quantity", e))?;
    Ok(CelValue::Opaque(Arc::new(QuantityVal(q))))
}

fn quantity_at<'a>(values: &'a [CelValue], i: usize, function: &str) -> Answer<&'a Quantity> {
    match values.get(i) {
        Some(CelValue::Opaque(o)) => o.downcast_ref::<QuantityVal>().map(|q| &q.0),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::no_such_overload(function, vec!["dyn".to_owned()]))
}

/// The order of a pair of quantities or of versions.
fn ordering(values: &[CelValue], function: &str) -> Answer<Ordering> {
    if let (Some(a), Some(b)) = (semver::version_at(values, 0), semver::version_at(values, 1)) {
        return Ok(a.compare(b));
    }
    Ok(quantity_at(values, 0, function)?.cmp(quantity_at(values, 1, function)?))
}

fn is_less_than(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(ordering(values, "isLessThan")? == Ordering::Less))
}

fn is_greater_than(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(ordering(values, "isGreaterThan")? == Ordering::Greater))
}

fn compare_to(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Int(ordering(values, "compareTo")? as i64))
}

fn sign(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Int(quantity_at(values, 0, "sign")?.signum() as i64))
}

fn is_integer(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(quantity_at(values, 0, "isInteger")?.as_i64().is_some()))
}

fn as_integer(values: &[CelValue]) -> Answer<CelValue> {
    let q = quantity_at(values, 0, "asInteger")?;
    q.as_i64().map(CelValue::Int).ok_or_else(|| ExecutionError::function_error("asInteger", "cannot convert value to integer"))
}

fn as_approximate_float(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Float(quantity_at(values, 0, "asApproximateFloat")?.as_f64()))
}

/// The second operand of `add` or `sub`: a quantity, or an int as upstream's
/// `NewQuantity(i, DecimalExponent)`.
fn operand(values: &[CelValue], function: &str) -> Answer<Quantity> {
    match values.get(1) {
        Some(CelValue::Int(i)) => Ok(Quantity::new(*i, kapi_apimachinery::quantity::Format::DecimalExponent)),
        _ => quantity_at(values, 1, function).cloned(),
    }
}

fn arithmetic(values: &[CelValue], function: &str, op: fn(&Quantity, &Quantity) -> Option<Quantity>) -> Answer<CelValue> {
    let sum = op(quantity_at(values, 0, function)?, &operand(values, function)?)
        .ok_or_else(|| ExecutionError::function_error(function, "quantities too far apart in scale to combine"))?;
    Ok(CelValue::Opaque(Arc::new(QuantityVal(sum))))
}

fn add(values: &[CelValue]) -> Answer<CelValue> {
    arithmetic(values, "add", Quantity::checked_add)
}

fn sub(values: &[CelValue]) -> Answer<CelValue> {
    arithmetic(values, "sub", Quantity::checked_sub)
}
