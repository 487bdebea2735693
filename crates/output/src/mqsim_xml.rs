//! A `simulate` run in the shape of MQSim's per-scenario result file
//! (`workload_scenario_N.xml`), so that scripts written for MQSim's output read storsim's
//! (docs/formats/mqsim-xml.md, "Results"). Element and attribute names are MQSim's; the values
//! are storsim's, in MQSim's units: response times in whole microseconds, rates and byte counts
//! with six decimals as MQSim prints doubles. An FTL statistic storsim does not measure is left
//! out rather than written as a zero.

use crate::simulate::SimulationResults;
use quick_xml::events::{BytesDecl, BytesText, Event};
use quick_xml::Writer;
use storsim_stats::{OpSummary, Summary};

/// The result file's text.
pub fn mqsim_results_xml(r: &SimulationResults) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b'\t', 1);
    write(&mut w, r).expect("writing XML into memory cannot fail");
    let mut text = String::from_utf8(w.into_inner()).expect("the writer wrote UTF-8");
    text.push('\n');
    text
}

type Xml = Writer<Vec<u8>>;

fn write(w: &mut Xml, r: &SimulationResults) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("us-ascii"), None)))?;
    w.create_element("MQSim_Results").write_inner_content(|w| {
        w.create_element("Host").write_inner_content(|w| {
            if r.flows.is_empty() {
                flow(w, &single_flow_name(r), r.summary)?;
            }
            for f in &r.flows {
                flow(w, &f.spec.name, f.summary)?;
            }
            Ok::<(), std::io::Error>(())
        })?;
        w.create_element("SSDDevice")
            .write_inner_content(|w| ftl(w, r))?;
        Ok::<(), std::io::Error>(())
    })?;
    Ok(())
}

/// MQSim's name for the flow of a run of one workload: a synthetic flow's or a trace's.
fn single_flow_name(r: &SimulationResults) -> String {
    if r.workload.format.is_some() {
        format!("Host.IO_Flow.Trace.{}", r.workload.name)
    } else {
        "Host.IO_Flow.Synth.No_0".to_string()
    }
}

/// MQSim prints its doubles with `std::to_string`: six decimals.
fn fixed(v: f64) -> String {
    format!("{v:.6}")
}

/// A response time in MQSim's whole microseconds.
fn micros(ns: f64) -> String {
    ((ns / 1000.0) as u64).to_string()
}

fn element(w: &mut Xml, name: &str, value: &str) -> std::io::Result<()> {
    w.create_element(name)
        .write_text_content(BytesText::new(value))?;
    Ok(())
}

/// One `<Host.IO_Flow>`: counts, rates and bytes per operation, and the response times.
/// MQSim's device response time starts when the request is placed in its submission queue,
/// its end-to-end delay when the flow generated it; storsim's service time and response time
/// are the same two spans.
fn flow(w: &mut Xml, name: &str, s: &Summary) -> std::io::Result<()> {
    w.create_element("Host.IO_Flow").write_inner_content(|w| {
        element(w, "Name", name)?;
        let ops: [(&str, &OpSummary); 3] = [("", &s.all), ("_Read", &s.read), ("_Write", &s.write)];
        let count_names = ["Request_Count", "Read_Request_Count", "Write_Request_Count"];
        for (name, (_, op)) in count_names.iter().zip(ops) {
            element(w, name, &op.requests.to_string())?;
        }
        for (suffix, op) in ops {
            element(w, &format!("IOPS{suffix}"), &fixed(op.iops))?;
        }
        for (suffix, op) in ops {
            element(
                w,
                &format!("Bytes_Transferred{suffix}"),
                &fixed(op.bytes as f64),
            )?;
        }
        for (suffix, op) in ops {
            element(
                w,
                &format!("Bandwidth{suffix}"),
                &fixed(op.bandwidth_bytes_per_s),
            )?;
        }
        let (service, latency) = (&s.all.service_ns, &s.all.latency_ns);
        element(w, "Device_Response_Time", &micros(service.mean))?;
        element(w, "Min_Device_Response_Time", &micros(service.min as f64))?;
        element(w, "Max_Device_Response_Time", &micros(service.max as f64))?;
        element(w, "End_to_End_Request_Delay", &micros(latency.mean))?;
        element(
            w,
            "Min_End_to_End_Request_Delay",
            &micros(latency.min as f64),
        )?;
        element(
            w,
            "Max_End_to_End_Request_Delay",
            &micros(latency.max as f64),
        )?;
        Ok::<(), std::io::Error>(())
    })?;
    Ok(())
}

/// `<SSDDevice.FTL>`'s attributes that storsim's SSD counters measure, for an SSD run.
fn ftl(w: &mut Xml, r: &SimulationResults) -> std::io::Result<()> {
    let counter = |name: &str| {
        r.device
            .counters
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value)
    };
    let (Some(reads), Some(programs), Some(erases)) = (
        counter("flash_reads"),
        counter("flash_programs"),
        counter("flash_erases"),
    ) else {
        return Ok(());
    };
    let mapping_reads = counter("flash_reads_mapping").unwrap_or(0.0);
    let mapping_programs = counter("flash_programs_mapping").unwrap_or(0.0);
    let whole = |v: f64| (v as u64).to_string();
    // MQSim counts the mapping table's reads and programs apart from the others.
    let mut attributes = vec![
        ("Issued_Flash_Read_CMD", whole(reads - mapping_reads)),
        (
            "Issued_Flash_Program_CMD",
            whole(programs - mapping_programs),
        ),
        ("Issued_Flash_Erase_CMD", whole(erases)),
        ("Issued_Flash_Read_CMD_For_Mapping", whole(mapping_reads)),
        (
            "Issued_Flash_Program_CMD_For_Mapping",
            whole(mapping_programs),
        ),
    ];
    // Under the suspend policy: the suspensions opened, by kind.
    for (name, storsim) in [
        (
            "Issued_Flash_Suspend_Program_CMD",
            "die_program_suspensions",
        ),
        ("Issued_Flash_Suspend_Erase_CMD", "die_erase_suspensions"),
    ] {
        if let Some(v) = counter(storsim) {
            attributes.push((name, whole(v)));
        }
    }
    if let (Some(hits), Some(misses)) = (counter("ftl_cmt_hits"), counter("ftl_cmt_misses")) {
        attributes.push(("CMT_Hits", whole(hits)));
        attributes.push(("CMT_Misses", whole(misses)));
        attributes.push(("Total_CMT_Queries", whole(hits + misses)));
    }
    // MQSim divides by the executions even when there were none, and prints -nan.
    let per = |moved: f64, runs: f64| {
        if runs > 0.0 {
            fixed(moved / runs)
        } else {
            "-nan".to_string()
        }
    };
    if let (Some(victims), Some(copied)) = (
        counter("ftl_gc_victim_blocks"),
        counter("ftl_gc_copied_pages"),
    ) {
        attributes.push(("Total_GC_Executions", whole(victims)));
        attributes.push(("Average_Page_Movement_For_GC", per(copied, victims)));
    }
    if let (Some(moves), Some(copied)) = (
        counter("ftl_wear_level_moves"),
        counter("ftl_wear_level_copied_pages"),
    ) {
        attributes.push(("Total_WL_Executions", whole(moves)));
        attributes.push(("Average_Page_Movement_For_WL", per(copied, moves)));
    }
    w.create_element("SSDDevice.FTL")
        .with_attributes(attributes.iter().map(|(k, v)| (*k, v.as_str())))
        .write_empty()?;
    Ok(())
}
