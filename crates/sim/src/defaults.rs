//! A small runnable scenario for every algorithm of the registry: what the web page starts from
//! when a learner picks an algorithm. Each is a few nodes over a network with varied delays, with
//! something to watch: contending requests, an election after the coordinator crashes,
//! synchronization rounds, a few multicasts, a snapshot of a bank.

use distsync_algorithms::registry::{self, Family};

/// The default scenario (TOML) of the algorithm `name`; `None` if no algorithm has that name.
///
/// ```
/// let toml = distsync_sim::default_scenario("suzuki-kasami").unwrap();
/// let scenario = distsync_sim::Scenario::from_toml(&toml, "default").unwrap();
/// let report = distsync_sim::run(&scenario, Default::default()).unwrap();
/// assert!(report.violations.is_empty());
/// assert_eq!(report.mutex.unwrap().entries, 8);
/// ```
pub fn default_scenario(name: &str) -> Option<String> {
    let entry = registry::lookup(name)?;
    let fifo = entry.needs_fifo;
    let network = |delay: &str, fifo: bool| format!("[network]\ndelay = {delay}\nfifo = {fifo}\n");
    let head = |nodes: u32, until: &str| {
        format!("algorithm = \"{name}\"\nnodes = {nodes}\nseed = 1\nuntil = \"{until}\"\n")
    };
    let text = match entry.family {
        Family::Mutex => format!(
            "{}{}\n{}\n[workload]\nkind = \"saturated\"\ncs = \"10ms\"\nrequests = 2\n",
            head(4, "10s"),
            "# Every node asks for the critical section twice, as soon as it can.",
            network("{ uniform = [\"1ms\", \"5ms\"] }", fifo),
        ),
        Family::Election => format!(
            "{}answer_timeout = \"20ms\"\ncoordinator_timeout = \"200ms\"\n\n{}\n\
             # The coordinator (the highest id) crashes; node 1 notices and starts an election.\n\
             [[event]]\nat = \"10ms\"\ncrash = 4\n\n[[event]]\nat = \"20ms\"\nelect = 1\n",
            head(5, "10s"),
            network("{ uniform = [\"1ms\", \"5ms\"] }", fifo),
        ),
        Family::ClockSync => {
            let own = match name {
                "cristian" => "server = 0\nsamples = 4\n",
                "ntp" => "strata = [[0, 1]]\n",
                _ => "threshold = \"1s\"\n",
            };
            format!(
                "{}sync_interval = \"1s\"\n{own}\n{}\n\
                 # Clocks start up to 50ms apart and drift up to 100 ppm; node 0 keeps true time.\n\
                 [clocks]\noffset = {{ uniform = [\"-50ms\", \"50ms\"] }}\n\
                 drift_ppm = {{ uniform = [-100, 100] }}\n\n\
                 [[clocks.node]]\nid = 0\noffset = \"0s\"\ndrift_ppm = 0\n",
                head(4, "3500ms"),
                network("{ uniform = [\"1ms\", \"5ms\"] }", fifo),
            )
        }
        Family::Multicast => format!(
            "{}\n{}\n# Each node multicasts three updates, at random times.\n\
             [multicast]\nrate = 20.0\ncount = 3\n",
            head(4, "10s"),
            network("{ uniform = [\"100us\", \"20ms\"] }", fifo),
        ),
        Family::Snapshot => format!(
            "{}\n{}\n# A bank: accounts of 1000, random transfers; node 0 takes a snapshot.\n\
             [app]\nkind = \"bank\"\nbalance = 1000\nrate = 100.0\ntransfers = 5\n\n\
             [[event]]\nat = \"20ms\"\nsnapshot = 0\n",
            head(3, "10s"),
            network("{ uniform = [\"1ms\", \"10ms\"] }", true),
        ),
    };
    Some(text)
}
