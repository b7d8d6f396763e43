//! The report of a session so far, as the page's outcome panel reads it: the simulator's report
//! as JSON, with each process's delivery order added for the multicast algorithms.

use distsync_sim::session::Session;
use serde_json::{json, Value};

/// The session's report as JSON; for multicast, with `delivery_order`: each process's
/// deliveries so far, in order ("3 from P1": payload 3, multicast by 1).
pub fn report_json(session: &Session) -> Value {
    let report = session.report();
    let multicast = report.sections.multicast.is_some();
    let mut json = serde_json::to_value(report).expect("a report is plain data");
    if multicast {
        let mut order = serde_json::Map::new();
        for p in session.view_window(0, 0).processes {
            order.insert(p.id.to_string(), json!([]));
        }
        for e in session.view_window(0, usize::MAX).log {
            let (Some(node), Some(out)) = (e.line.get("node"), e.line.pointer("/output/Deliver"))
            else {
                continue;
            };
            let words = format!("{} from P{}", out["payload"], out["origin"]);
            if let Some(Value::Array(list)) = order.get_mut(&node.to_string()) {
                list.push(Value::String(words));
            }
        }
        json["delivery_order"] = Value::Object(order);
    }
    json
}
