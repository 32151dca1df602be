//! Kubernetes' IP and CIDR libraries (`k8s.io/apiserver/pkg/cel/library/ip.go`, `cidr.go`):
//! `ip()` and `cidr()` values, their methods, `isIP`, `isCIDR` and `ip.isCanonical`, with Go's
//! `netip` rules (no zones, no IPv4-mapped IPv6 addresses, prefix lengths without sign or
//! leading zeros) and upstream's error messages.

use std::net::IpAddr;
use std::sync::Arc;

use ::cel::common::types::{STRING_TYPE, Type};
use ::cel::objects::Opaque;
use ::cel::{DeclarationError, Env, ExecutionError, Value as CelValue};

use super::{Answer, text};

/// The CEL type of `ip()` values, upstream's `net.IP`.
fn ip_type() -> Type {
    Type::new_opaque_type("net.IP")
}

/// The CEL type of `cidr()` values, upstream's `net.CIDR`.
fn cidr_type() -> Type {
    Type::new_opaque_type("net.CIDR")
}

/// An `ip()`: one IPv4 or IPv6 address, without zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

/// A `cidr()`: an address (kept as written, not masked) and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

/// Go's `netip.ParseAddr` (zones recognised, so that they can be refused by name).
fn netip_parse_addr(raw: &str) -> Result<(IpAddr, bool), String> {
    let (addr, zone) = match raw.split_once('%') {
        Some((addr, zone)) if addr.contains(':') => {
            if zone.is_empty() {
                return Err(format!("ParseAddr({raw:?}): zone must be a non-empty string"));
            }
            (addr, true)
        }
        _ => (raw, false),
    };
    if raw.is_empty() {
        return Err("ParseAddr(\"\"): unable to parse IP".to_owned());
    }
    addr.parse::<IpAddr>().map(|ip| (ip, zone)).map_err(|_| format!("ParseAddr({raw:?}): unable to parse IP"))
}

fn is_4in6(ip: &IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// Upstream's `parseIPAddr`.
pub(super) fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let (addr, zone) = netip_parse_addr(raw).map_err(|e| format!("IP Address {raw:?} parse error during conversion from string: {e}"))?;
    if zone {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

/// Go's `netip.ParsePrefix`.
fn netip_parse_prefix(raw: &str) -> Result<Cidr, String> {
    let fail = |msg: &str| format!("netip.ParsePrefix({raw:?}): {msg}");
    let Some((addr, bits)) = raw.rsplit_once('/') else {
        return Err(fail("no '/'"));
    };
    let (ip, zone) = netip_parse_addr(addr).map_err(|e| fail(&e))?;
    if zone {
        return Err(fail("IPv6 zones cannot be present in a prefix"));
    }
    let bad_bits = || fail(&format!("bad bits after slash: {bits:?}"));
    if bits.len() > 1 && !bits.starts_with(|c: char| ('1'..='9').contains(&c)) {
        return Err(bad_bits());
    }
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_bits());
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    match bits.parse::<u32>() {
        Ok(b) if b <= max => Ok(Cidr { addr: ip, bits: b as u8 }),
        _ => Err(fail("prefix length out of range")),
    }
}

/// Upstream's `parseCIDR`.
pub(super) fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let cidr = netip_parse_prefix(raw).map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if is_4in6(&cidr.addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(cidr)
}

/// `addr` with every bit past the first `bits` cleared.
fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4((u32::from(v4) & m).into())
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6((u128::from(v6) & m).into())
        }
    }
}

impl Cidr {
    /// Go's `Prefix.Contains`: same family, same masked bits.
    fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.bits) == mask(self.addr, self.bits)
    }

    /// Go's `Prefix.Overlaps`.
    fn overlaps(&self, other: &Cidr) -> bool {
        let bits = self.bits.min(other.bits);
        self.addr.is_ipv4() == other.addr.is_ipv4() && mask(self.addr, bits) == mask(other.addr, bits)
    }

    fn masked(&self) -> Cidr {
        Cidr { addr: mask(self.addr, self.bits), bits: self.bits }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Go's `Addr.IsLinkLocalUnicast`.
fn is_link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `Addr.IsLinkLocalMulticast`.
fn is_link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's `Addr.IsGlobalUnicast`: private and unique-local addresses count.
fn is_global_unicast(ip: IpAddr) -> bool {
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    !broadcast && !ip.is_unspecified() && !ip.is_loopback() && !ip.is_multicast() && !is_link_local_unicast(ip)
}

on_values!(ip_fn, ip);
on_values!(is_ip_fn, is_ip);
on_values!(ip_is_canonical_fn, ip_is_canonical);
on_values!(ip_to_string_fn, ip_to_string);
on_values!(family_fn, family);
on_values!(is_unspecified_fn, is_unspecified);
on_values!(is_loopback_fn, is_loopback);
on_values!(is_link_local_multicast_fn, is_link_local_multicast_of);
on_values!(is_link_local_unicast_fn, is_link_local_unicast_of);
on_values!(is_global_unicast_fn, is_global_unicast_of);
on_values!(cidr_fn, cidr);
on_values!(is_cidr_fn, is_cidr);
on_values!(cidr_to_string_fn, cidr_to_string);
on_values!(contains_ip_fn, contains_ip);
on_values!(contains_cidr_fn, contains_cidr);
on_values!(cidr_ip_fn, cidr_ip);
on_values!(masked_fn, masked);
on_values!(prefix_length_fn, prefix_length);

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], ip_fn)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip_fn)?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], ip_is_canonical_fn)?;
    env.add_overload("string", "ip_to_string", vec![ip_type()], ip_to_string_fn)?;
    env.add_member_overload("family", "ip_family", ip_type(), vec![], family_fn)?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", ip_type(), vec![], is_unspecified_fn)?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip_type(), vec![], is_loopback_fn)?;
    env.add_member_overload("isLinkLocalMulticast", "ip_is_link_local_multicast", ip_type(), vec![], is_link_local_multicast_fn)?;
    env.add_member_overload("isLinkLocalUnicast", "ip_is_link_local_unicast", ip_type(), vec![], is_link_local_unicast_fn)?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", ip_type(), vec![], is_global_unicast_fn)?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], cidr_fn)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr_fn)?;
    env.add_overload("string", "cidr_to_string", vec![cidr_type()], cidr_to_string_fn)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_string", cidr_type(), vec![STRING_TYPE], contains_ip_fn)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr_type(), vec![ip_type()], contains_ip_fn)?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr_string", cidr_type(), vec![STRING_TYPE], contains_cidr_fn)?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", cidr_type(), vec![cidr_type()], contains_cidr_fn)?;
    env.add_member_overload("ip", "cidr_ip", cidr_type(), vec![], cidr_ip_fn)?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr_type(), vec![], prefix_length_fn)?;
    env.add_member_overload("masked", "cidr_masked", cidr_type(), vec![], masked_fn)?;
    Ok(())
}

fn ip_at(values: &[CelValue], i: usize, function: &str) -> Answer<IpAddr> {
    match values.get(i) {
        Some(CelValue::Opaque(o)) => o.downcast_ref::<Ip>().map(|ip| ip.0),
        Some(CelValue::String(s)) => return parse_ip(s).map_err(|e| ExecutionError::function_error(function, e)),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::no_such_overload(function, vec!["dyn".to_owned()]))
}

fn cidr_at(values: &[CelValue], i: usize, function: &str) -> Answer<Cidr> {
    match values.get(i) {
        Some(CelValue::Opaque(o)) => o.downcast_ref::<Cidr>().copied(),
        Some(CelValue::String(s)) => {
            // `stringToCIDR` wraps `parseCIDR`'s message once more.
            return parse_cidr(s).map_err(|e| {
                ExecutionError::function_error(function, format!("network address parse error during conversion from string: {e}"))
            });
        }
        _ => None,
    }
    .ok_or_else(|| ExecutionError::no_such_overload(function, vec!["dyn".to_owned()]))
}

fn ip_value(ip: IpAddr) -> CelValue {
    CelValue::Opaque(Arc::new(Ip(ip)))
}

fn string_value(s: String) -> CelValue {
    CelValue::String(Arc::new(s))
}

fn ip(values: &[CelValue]) -> Answer<CelValue> {
    ip_at(values, 0, "ip").map(ip_value)
}

fn is_ip(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(parse_ip(text(values, 0, "isIP")?).is_ok()))
}

fn ip_is_canonical(values: &[CelValue]) -> Answer<CelValue> {
    let s = text(values, 0, "ip.isCanonical")?;
    let ip = parse_ip(s).map_err(|e| ExecutionError::function_error("ip.isCanonical", e))?;
    Ok(CelValue::Bool(ip.to_string() == s))
}

fn ip_to_string(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(ip_at(values, 0, "string")?.to_string()))
}

fn family(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Int(if ip_at(values, 0, "family")?.is_ipv4() { 4 } else { 6 }))
}

fn is_unspecified(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(ip_at(values, 0, "isUnspecified")?.is_unspecified()))
}

fn is_loopback(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(ip_at(values, 0, "isLoopback")?.is_loopback()))
}

fn is_link_local_multicast_of(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(is_link_local_multicast(ip_at(values, 0, "isLinkLocalMulticast")?)))
}

fn is_link_local_unicast_of(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(is_link_local_unicast(ip_at(values, 0, "isLinkLocalUnicast")?)))
}

fn is_global_unicast_of(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(is_global_unicast(ip_at(values, 0, "isGlobalUnicast")?)))
}

fn cidr(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Opaque(Arc::new(cidr_at(values, 0, "cidr")?)))
}

fn is_cidr(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Bool(parse_cidr(text(values, 0, "isCIDR")?).is_ok()))
}

fn cidr_to_string(values: &[CelValue]) -> Answer<CelValue> {
    Ok(string_value(cidr_at(values, 0, "string")?.to_string()))
}

fn contains_ip(values: &[CelValue]) -> Answer<CelValue> {
    let cidr = cidr_at(values, 0, "containsIP")?;
    Ok(CelValue::Bool(cidr.contains(ip_at(values, 1, "containsIP")?)))
}

fn contains_cidr(values: &[CelValue]) -> Answer<CelValue> {
    let cidr = cidr_at(values, 0, "containsCIDR")?;
    let other = cidr_at(values, 1, "containsCIDR")?;
    Ok(CelValue::Bool(cidr.overlaps(&other) && cidr.bits <= other.bits))
}

fn cidr_ip(values: &[CelValue]) -> Answer<CelValue> {
    Ok(ip_value(cidr_at(values, 0, "ip")?.addr))
}

fn masked(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Opaque(Arc::new(cidr_at(values, 0, "masked")?.masked())))
}

fn prefix_length(values: &[CelValue]) -> Answer<CelValue> {
    Ok(CelValue::Int(i64::from(cidr_at(values, 0, "prefixLength")?.bits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_as_netip_does() {
        assert_eq!(parse_ip("10.0.0.1"), Ok("10.0.0.1".parse().expect("ip")));
        assert!(parse_ip("2001:db8::1").is_ok());
        assert_eq!(
            parse_ip("10.0.0"),
            Err(r#"IP Address "10.0.0" parse error during conversion from string: ParseAddr("10.0.0"): unable to parse IP"#.to_owned())
        );
        assert_eq!(parse_ip("fe80::1%eth0"), Err(r#"IP address "fe80::1%eth0" with zone value is not allowed"#.to_owned()));
        assert_eq!(parse_ip("::ffff:1.2.3.4"), Err(r#"IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed"#.to_owned()));
        assert!(parse_ip("010.0.0.1").is_err(), "leading zeros");
    }

    #[test]
    fn prefixes_parse_as_netip_does() {
        let c = parse_cidr("10.1.2.3/8").expect("cidr");
        assert_eq!(c.to_string(), "10.1.2.3/8");
        assert_eq!(c.masked().to_string(), "10.0.0.0/8");
        assert!(c.contains("10.255.0.1".parse().expect("ip")));
        assert!(!c.contains("11.0.0.1".parse().expect("ip")));
        assert!(!c.contains("::1".parse().expect("ip")));
        for bad in ["10.0.0.0/33", "10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0", "::/129", "fe80::1%eth0/64", "::ffff:1.2.3.4/96"] {
            assert!(parse_cidr(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_cidr("10.0.0.0/33"),
            Err(r#"network address parse error during conversion from string: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range"#.to_owned())
        );
        assert_eq!(parse_cidr("2001:db8::/32").expect("v6").masked().to_string(), "2001:db8::/32");
        assert_eq!(parse_cidr("0.0.0.0/0").expect("all").bits, 0);
    }

    #[test]
    fn address_classes_follow_go() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        assert!(is_global_unicast(ip("10.0.0.1")), "private addresses are global unicast in Go");
        assert!(is_global_unicast(ip("fd00::1")));
        assert!(!is_global_unicast(ip("255.255.255.255")));
        assert!(!is_global_unicast(ip("169.254.1.1")));
        assert!(!is_global_unicast(ip("fe80::1")));
        assert!(!is_global_unicast(ip("224.0.0.1")));
        assert!(is_link_local_multicast(ip("224.0.0.251")));
        assert!(is_link_local_multicast(ip("ff02::1")));
        assert!(!is_link_local_multicast(ip("ff05::1")));
        assert!(is_link_local_unicast(ip("febf::1")));
        assert!(!is_link_local_unicast(ip("fec0::1")));
    }
}
