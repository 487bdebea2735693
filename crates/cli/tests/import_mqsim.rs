//! `storsim import mqsim` end to end: MQSim's bench2g configuration (from `../shared`) with a
//! workload written here, imported, then simulated as the files say; bad files exit 2 naming
//! the file, the line and the element.

mod common;
use common::{stderr, storsim, temp_dir};
use serde_json::Value;

/// A workload of two scenarios: a trace flow beside a synthetic one, then a synthetic flow
/// alone at a fixed bandwidth.
const WORKLOAD: &str = r#"<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios>
	<IO_Scenario>
		<IO_Flow_Parameter_Set_Trace_Based>
			<Priority_Class>HIGH</Priority_Class>
			<Device_Level_Data_Caching_Mode>WRITE_CACHE</Device_Level_Data_Caching_Mode>
			<Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
			<Chip_IDs>0,1</Chip_IDs>
			<Die_IDs>0</Die_IDs>
			<Plane_IDs>0,1</Plane_IDs>
			<Initial_Occupancy_Percentage>0</Initial_Occupancy_Percentage>
			<File_Path>small.trace</File_Path>
			<Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>
			<Relay_Count>1</Relay_Count>
			<Time_Unit>NANOSECOND</Time_Unit>
		</IO_Flow_Parameter_Set_Trace_Based>
		<IO_Flow_Parameter_Set_Synthetic>
			<Priority_Class>LOW</Priority_Class>
			<Device_Level_Data_Caching_Mode>TURNED_OFF</Device_Level_Data_Caching_Mode>
			<Channel_IDs>4,5,6,7</Channel_IDs>
			<Chip_IDs>0,1</Chip_IDs>
			<Die_IDs>0</Die_IDs>
			<Plane_IDs>0,1</Plane_IDs>
			<Initial_Occupancy_Percentage>0</Initial_Occupancy_Percentage>
			<Working_Set_Percentage>100</Working_Set_Percentage>
			<Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
			<Read_Percentage>0</Read_Percentage>
			<Address_Distribution>RANDOM_UNIFORM</Address_Distribution>
			<Percentage_of_Hot_Region>0</Percentage_of_Hot_Region>
			<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
			<Address_Alignment_Unit>8</Address_Alignment_Unit>
			<Request_Size_Distribution>FIXED</Request_Size_Distribution>
			<Average_Request_Size>8</Average_Request_Size>
			<Variance_Request_Size>0</Variance_Request_Size>
			<Seed>5</Seed>
			<Average_No_of_Reqs_in_Queue>4</Average_No_of_Reqs_in_Queue>
			<Bandwidth>0</Bandwidth>
			<Stop_Time>0</Stop_Time>
			<Total_Requests_To_Generate>300</Total_Requests_To_Generate>
		</IO_Flow_Parameter_Set_Synthetic>
	</IO_Scenario>
	<IO_Scenario>
		<IO_Flow_Parameter_Set_Synthetic>
			<Priority_Class>HIGH</Priority_Class>
			<Device_Level_Data_Caching_Mode>WRITE_CACHE</Device_Level_Data_Caching_Mode>
			<Synthetic_Generator_Type>BANDWIDTH</Synthetic_Generator_Type>
			<Read_Percentage>100</Read_Percentage>
			<Address_Distribution>STREAMING</Address_Distribution>
			<Average_Request_Size>16</Average_Request_Size>
			<Seed>9</Seed>
			<Bandwidth>8192000</Bandwidth>
			<Stop_Time>0</Stop_Time>
			<Total_Requests_To_Generate>200</Total_Requests_To_Generate>
		</IO_Flow_Parameter_Set_Synthetic>
	</IO_Scenario>
</MQSim_IO_Scenarios>
"#;

#[test]
fn mqsims_files_import_and_simulate_as_they_say() {
    let Some(bench2g) = storsim_testenv::shared("mqsim-ref/bench2g/ssdconfig.xml") else {
        return;
    };
    let tmp = temp_dir("import-mqsim");
    let dir = tmp.path();
    let workload = dir.join("workload.xml");
    std::fs::write(&workload, WORKLOAD).unwrap();
    // 200 requests of MQSim's ASCII layout, reads and writes, 50 µs apart.
    let trace: String = (0..200)
        .map(|i| format!("{} 0 {} 8 {}\n", i * 50_000, i * 64, i % 2))
        .collect();
    std::fs::write(dir.join("small.trace"), trace).unwrap();
    let out = dir.join("imported");
    let o = storsim(&[
        "import",
        "mqsim",
        bench2g.to_str().unwrap(),
        workload.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Each setting without an equivalent has one note line naming its file and line.
    let err = stderr(&o);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("storsim: note: "))
        .collect();
    assert!(
        notes
            .iter()
            .any(|l| l.contains("ssdconfig.xml:") && l.contains("<Transaction_Scheduling_Policy>")),
        "{notes:?}"
    );
    let json = dir.join("s1.json");
    let xml = dir.join("s1.xml");
    let device = out.join("device.toml");
    let o = storsim(&[
        "simulate",
        "--device",
        device.to_str().unwrap(),
        "--workload",
        out.join("scenario-1.toml").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--mqsim-xml",
        xml.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    results_read_as_mqsims(&std::fs::read_to_string(&xml).unwrap(), &doc);
    let flows = doc["flows"].as_array().expect("a run of flows has `flows`");
    let by_name = |name: &str| {
        flows
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no flow {name} in {flows:?}"))
    };
    assert_eq!(
        by_name("Host.IO_Flow.Trace.small.trace")["summary"]["requests"],
        200
    );
    let synthetic = by_name("Host.IO_Flow.Synth.No_1");
    assert_eq!(synthetic["summary"]["requests"], 300);
    assert_eq!(synthetic["summary"]["read"]["requests"], 0);
    // The host interface came across: NVMe with its eight queue pairs.
    assert_eq!(doc["device"]["model"], "ssd");
    assert!(
        doc["device"]["counters"]["hostif_fetched_commands"]
            .as_f64()
            .unwrap()
            >= 500.0
    );

    // Scenario 2: 8,192,000 B/s of 8 KiB requests is 1000 a second, 200 of them reads.
    let json = dir.join("s2.json");
    let o = storsim(&[
        "simulate",
        "--device",
        device.to_str().unwrap(),
        "--workload",
        out.join("scenario-2.toml").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary = &doc["summary"];
    assert_eq!(summary["read"]["requests"], 200);
    // Poisson arrivals at 1000 a second: 200 requests span about 0.2 s of simulated time.
    let elapsed_s = summary["elapsed_ns"].as_f64().unwrap() / 1e9;
    assert!((0.12..0.3).contains(&elapsed_s), "{elapsed_s} s");
}

#[test]
fn a_bad_mqsim_file_exits_2_naming_the_file_line_and_element() {
    let tmp = temp_dir("import-mqsim-bad");
    let dir = tmp.path();
    let config = dir.join("ssdconfig.xml");
    std::fs::write(
        &config,
        "<Execution_Parameter_Set>\n  <Device_Parameter_Set>\n    <Flash_Channel_Cont>8</Flash_Channel_Cont>\n  </Device_Parameter_Set>\n</Execution_Parameter_Set>\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = storsim(&[
        "import",
        "mqsim",
        config.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{}:", config.display()))
            && e.contains("<Device_Parameter_Set>: has no <Flash_Parameter_Set>"),
        "{e}"
    );
    assert!(!out.exists(), "nothing is written for a refused file");
    std::fs::write(&config, "<Execution_Parameter_Set><Device_Parameter_Set>").unwrap();
    let o = storsim(&[
        "import",
        "mqsim",
        config.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not well-formed XML"), "{}", stderr(&o));
}

/// The child elements of each `<Host.IO_Flow>` of an MQSim result file, in order.
fn flow_elements(doc: &roxmltree::Document) -> Vec<Vec<String>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("Host.IO_Flow"))
        .map(|f| {
            f.children()
                .filter(|c| c.is_element())
                .map(|c| c.tag_name().name().to_string())
                .collect()
        })
        .collect()
}

/// `--mqsim-xml`'s file has MQSim's elements in MQSim's order (its own stock result file is
/// the reference, when `../shared` is there), and its values are the run's.
fn results_read_as_mqsims(text: &str, run: &Value) {
    let xml = roxmltree::Document::parse(text).expect("well-formed XML");
    assert_eq!(xml.root_element().tag_name().name(), "MQSim_Results");
    let flows = run["flows"].as_array().unwrap();
    let ours = flow_elements(&xml);
    assert_eq!(ours.len(), flows.len());
    if let Some(reference) = storsim_testenv::shared("mqsim-ref/stock/workload_scenario_1.xml") {
        let text = std::fs::read_to_string(reference).unwrap();
        let mqsim = roxmltree::Document::parse(&text).unwrap();
        assert_eq!(ours[0], flow_elements(&mqsim)[0], "the elements of a flow");
        // Every FTL statistic written is one MQSim writes.
        let attributes = |d: &roxmltree::Document| -> Vec<String> {
            let ftl = d
                .descendants()
                .find(|n| n.has_tag_name("SSDDevice.FTL"))
                .unwrap();
            ftl.attributes().map(|a| a.name().to_string()).collect()
        };
        let theirs = attributes(&mqsim);
        for name in attributes(&xml) {
            assert!(
                theirs.contains(&name),
                "{name} is not one of MQSim's FTL statistics"
            );
        }
    }
    for (node, flow) in xml
        .descendants()
        .filter(|n| n.has_tag_name("Host.IO_Flow"))
        .zip(flows)
    {
        let value = |name: &str| {
            node.children()
                .find(|c| c.has_tag_name(name))
                .and_then(|c| c.text())
                .unwrap()
                .to_string()
        };
        let summary = &flow["summary"];
        assert_eq!(value("Name"), flow["name"].as_str().unwrap());
        assert_eq!(value("Request_Count"), summary["requests"].to_string());
        let iops: f64 = value("IOPS").parse().unwrap();
        assert!(
            (iops - summary["iops"].as_f64().unwrap()).abs() < 1e-5,
            "{iops}"
        );
        // Whole microseconds of the service and response times.
        let micros = |v: &Value| (v.as_f64().unwrap() / 1000.0) as u64;
        assert_eq!(
            value("Device_Response_Time"),
            micros(&summary["service_ns"]["mean"]).to_string()
        );
        assert_eq!(
            value("Max_End_to_End_Request_Delay"),
            micros(&summary["latency_ns"]["max"]).to_string()
        );
    }
    let ftl = xml
        .descendants()
        .find(|n| n.has_tag_name("SSDDevice.FTL"))
        .unwrap();
    let counters = &run["device"]["counters"];
    assert_eq!(
        ftl.attribute("Issued_Flash_Erase_CMD").unwrap(),
        counters["flash_erases"].as_f64().unwrap().to_string()
    );
}
