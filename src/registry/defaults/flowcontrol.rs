//! `flowcontrol.apiserver.k8s.io/v1` (upstream `pkg/apis/flowcontrol/v1/defaults.go`).

use kapi_api::api::flowcontrol::v1 as flowcontrol;

use super::{Registry, default_int};

pub fn register(r: &mut Registry) {
    r.add(set_defaults_flow_schema_spec);
    r.add(set_defaults_exempt_priority_level_configuration);
    r.add(set_defaults_limited_priority_level_configuration);
    r.add(set_defaults_queuing_configuration);
}

/// Matching precedence 1000 (a non-pointer integer upstream: 0 is unset).
pub fn set_defaults_flow_schema_spec(s: &mut flowcontrol::FlowSchemaSpec) {
    default_int(&mut s.matching_precedence, 1000);
}

pub fn set_defaults_exempt_priority_level_configuration(c: &mut flowcontrol::ExemptPriorityLevelConfiguration) {
    c.nominal_concurrency_shares.get_or_insert(0);
    c.lendable_percent.get_or_insert(0);
}

/// 30 shares, nothing lent. (In v1 the shares are a pointer, so an explicit 0 stays.)
pub fn set_defaults_limited_priority_level_configuration(c: &mut flowcontrol::LimitedPriorityLevelConfiguration) {
    c.nominal_concurrency_shares.get_or_insert(30);
    c.lendable_percent.get_or_insert(0);
}

/// 64 queues, hands of 8, 50 requests per queue.
pub fn set_defaults_queuing_configuration(c: &mut flowcontrol::QueuingConfiguration) {
    default_int(&mut c.hand_size, 8);
    default_int(&mut c.queues, 64);
    default_int(&mut c.queue_length_limit, 50);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::defaults::testing::assert_defaults;

    #[test]
    fn flow_schemas_and_priority_levels() {
        assert_defaults::<flowcontrol::FlowSchema>(
            json!({"spec": {"priorityLevelConfiguration": {"name": "p"}}}),
            json!({"spec": {"priorityLevelConfiguration": {"name": "p"}, "matchingPrecedence": 1000}}),
        );
        assert_defaults::<flowcontrol::PriorityLevelConfiguration>(
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
            json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}}}),
        );
    }
}
