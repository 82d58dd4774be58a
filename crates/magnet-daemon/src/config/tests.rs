//! config.rs's tests.
use super::*;

#[test]
fn empty_file_is_the_defaults() {
    assert_eq!(Config::parse("", "t").unwrap(), Config::default());
}

#[test]
fn app_calls_is_syscalls_or_sends() {
    let read = |v: &str| Config::parse(&format!("app_calls = {v:?}\n"), "t");
    assert_eq!(read("sends").unwrap().app_calls, AppCalls::Sends);
    assert_eq!(read("syscalls").unwrap().app_calls, AppCalls::Syscalls);
    assert_eq!(Config::default().app_calls, AppCalls::Syscalls);
    let e = read("calls").unwrap_err().to_string();
    assert!(
        e.contains("app_calls = \"calls\"") && e.contains("\"sends\""),
        "{e}"
    );
}

#[test]
fn bpf_stats_is_on_unless_said() {
    use crate::config::BpfStats;
    let parse = |t: &str| Config::parse(t, "t").map(|c| c.bpf_stats);
    assert_eq!(Config::default().bpf_stats, BpfStats::Full);
    assert_eq!(parse("bpf_stats = false\n").unwrap(), BpfStats::Off);
    assert_eq!(parse("bpf_stats = true\n").unwrap(), BpfStats::Full);
    assert_eq!(parse("bpf_stats = \"off\"\n").unwrap(), BpfStats::Off);
    assert_eq!(parse("bpf_stats = \"full\"\n").unwrap(), BpfStats::Full);
    assert_eq!(
        parse("bpf_stats = \"sampled\"\n").unwrap(),
        BpfStats::Sampled
    );
    let e = parse("bpf_stats = \"often\"\n").unwrap_err().to_string();
    assert!(e.contains("bpf_stats") && e.contains("\"sampled\""), "{e}");
}

#[test]
fn keys_are_read_and_checked() {
    let c = Config::parse(
        "http = \"127.0.0.1:1\"\nsocket = \"\"\nretain_closed = \"2s\"\npacket_hooks = false\n[metrics]\nconnection_ports = [80, 443]\n",
        "t",
    )
    .unwrap();
    assert_eq!(c.http, Some("127.0.0.1:1".parse().unwrap()));
    assert_eq!(c.socket, None);
    assert_eq!(c.retain_closed, Duration::from_secs(2));
    assert_eq!(c.metrics.connection_ports, vec![80, 443]);
    assert_eq!(c.packet_hooks, PacketHooks::Off);
    assert_eq!(Config::default().packet_hooks, PacketHooks::DEFAULT);
    for (bad, says) in [
        ("http = \"nope\"", "http"),
        ("retain_closed = \"3 weeks\"", "retain_closed"),
        ("max_connections = 0", "max_connections"),
        (
            "send_stages_every = 0",
            "send_stages_every = 0: give 1 to 65536",
        ),
        ("receive_stages_every = 65537", "receive_stages_every"),
        ("bogus = 1", "bogus"),
        ("packet_hooks = \"no\"", "packet_hooks = \"no\": give"),
        ("packet_hooks = 1", "packet_hooks"),
        (
            "packet_window = \"2s\"",
            "must be shorter than packet_period (2s)",
        ),
        (
            "packet_window = \"1s\"\npacket_period = \"500ms\"",
            "packet_window (1s) must be shorter than packet_period (500ms)",
        ),
        (
            "packet_window = \"5ms\"",
            "packet_window = \"5ms\": at least 10ms",
        ),
        (
            "packet_period = \"often\"",
            "packet_period: 'often' is not a duration",
        ),
        (
            "packet_hooks = \"always\"\nstage_hooks = \"always\"\npacket_window = \"1s\"",
            "packet_window applies only to packet_hooks or stage_hooks = \"sampled\" \
             (this file says packet_hooks = \"always\", stage_hooks = \"always\")",
        ),
        (
            "packet_hooks = true\nstage_hooks = \"always\"\npacket_period = \"1s\"",
            "packet_period applies only",
        ),
        (
            "stage_hooks = \"off\"",
            "stage_hooks = \"off\": give \"sampled\" or \"always\"",
        ),
        ("socket_mode = \"999\"", "socket_mode"),
        (
            "socket_mode = \"0\"",
            "socket_mode = \"0\": give an octal mode from \"0600\" to \"0777\"",
        ),
        ("max_clients = 0", "max_clients = 0: give 1 to 4096"),
        ("max_clients = -1", "max_clients"),
        ("max_clients = 5000", "max_clients = 5000: give 1 to 4096"),
        (
            "max_clients = 4\nmax_clients_per_uid = 5",
            "max_clients_per_uid = 5: give 1 to max_clients (4)",
        ),
        ("max_clients_per_uid = 0", "max_clients_per_uid = 0: give 1"),
        (
            "request_timeout = \"0s\"",
            "request_timeout = \"0s\": give 100ms to 60s",
        ),
        (
            "[metrics]\nmax_connection_series = 0",
            "metrics.max_connection_series = 0: give 1 to 100000",
        ),
        (
            "[recorder]\nseconds = \"0s\"",
            "recorder.seconds = \"0s\": give 1s to 1h",
        ),
        ("[recorder]\ntrigger_stall = \"10ms\"", "trigger_stall"),
        ("[recorder]\ntrigger_stall = \"soon\"", "trigger_stall"),
        (
            "packet_hooks = false\n[recorder]\ntrigger_latency = \"2s\"",
            "trigger_latency needs packet_hooks = \"sampled\" or \"always\"",
        ),
        (
            "[recorder]\ntrigger_stall = \"2s\"",
            "trigger_stall needs packet_hooks = \"always\"",
        ),
        (
            "packet_hooks = \"off\"\n[recorder]\ntrigger_stall = \"2s\"",
            "trigger_stall needs packet_hooks = \"always\"",
        ),
    ] {
        let e = Config::parse(bad, "magnetd.toml").unwrap_err().to_string();
        assert!(e.starts_with("magnetd.toml: "), "{e}");
        assert!(e.contains(says), "{bad}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}

#[test]
fn packet_hooks_modes() {
    let hooks = |t: &str| Config::parse(t, "t").unwrap().packet_hooks;
    assert_eq!(hooks("packet_hooks = \"always\""), PacketHooks::Always);
    assert_eq!(hooks("packet_hooks = true"), PacketHooks::Always);
    assert_eq!(hooks("packet_hooks = \"off\""), PacketHooks::Off);
    assert_eq!(
        hooks("packet_hooks = \"sampled\"\npacket_window = \"250ms\"\npacket_period = \"5s\""),
        PacketHooks::Sampled {
            window: Duration::from_millis(250),
            period: Duration::from_secs(5)
        }
    );
    assert_eq!(
        hooks("packet_period = \"10s\""),
        PacketHooks::Sampled {
            window: Duration::from_millis(100),
            period: Duration::from_secs(10)
        }
    );
    // The stage programs keep the same windows, whatever packet_hooks says.
    let both = |t: &str| {
        let c = Config::parse(t, "t").unwrap();
        (c.packet_hooks, c.stage_hooks, c.windows())
    };
    let (w, p) = (Duration::from_millis(250), Duration::from_secs(5));
    let sampled = StageHooks::Sampled {
        window: w,
        period: p,
    };
    assert_eq!(
        both("packet_window = \"250ms\"\npacket_period = \"5s\""),
        (
            PacketHooks::Sampled {
                window: w,
                period: p
            },
            sampled,
            Some((w, p))
        )
    );
    assert_eq!(
        both("packet_hooks = \"off\"\npacket_window = \"250ms\"\npacket_period = \"5s\""),
        (PacketHooks::Off, sampled, Some((w, p)))
    );
    assert_eq!(
        both("packet_hooks = \"always\"\nstage_hooks = \"always\""),
        (PacketHooks::Always, StageHooks::Always, None)
    );
    assert_eq!(Config::default().stage_hooks, StageHooks::DEFAULT);
    assert_eq!(StageHooks::DEFAULT.name(), "sampled");
    // the latency trigger reads the sampled histograms too
    assert!(Config::parse("[recorder]\ntrigger_latency = \"50ms\"", "t").is_ok());
}

#[test]
fn the_systemd_example_is_the_defaults() {
    let text = include_str!("../../../../systemd/magnetd.toml");
    assert_eq!(
        Config::parse(text, "systemd/magnetd.toml").unwrap(),
        Config::default()
    );
}

#[test]
fn the_stall_trigger_is_read() {
    let c = Config::parse(
        "packet_hooks = \"always\"\n[recorder]\ntrigger_stall = \"2s\"\ntrigger_stall_ports = [5432]\n",
        "t",
    )
    .unwrap();
    let r = c.recorder.unwrap();
    assert_eq!(r.trigger_stall, Some(Duration::from_secs(2)));
    assert_eq!(r.trigger_stall_ports, vec![5432]);
}
