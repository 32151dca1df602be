//! What the benches read of a process from `/proc`, shared by `serve.rs` and `watchcache.rs`.

/// User plus system CPU time of a process so far (all threads), in microseconds, from
/// `/proc/<pid>/stat`.
pub fn cpu_micros(pid: u32) -> Result<u64, String> {
    // The kernel reports these in clock ticks of USER_HZ, which is 100 on every Linux ABI.
    const MICROS_PER_TICK: u64 = 10_000;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("reading /proc/{pid}/stat: {e}"))?;
    // The command name is in parentheses and may contain spaces: count fields after it.
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).ok_or("no command name in stat")?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => Ok((user + system) * MICROS_PER_TICK),
        _ => Err(format!("no CPU times in /proc/{pid}/stat")),
    }
}
