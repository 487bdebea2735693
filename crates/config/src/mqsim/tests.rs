//! The MQSim import against files written here (every element of each set, values chosen so
//! that each mapping rule shows) and, when `../shared` is there, MQSim's own stock files.

use super::*;
use crate::parse_device_toml;
use std::io::Write;
use storsim_ftl::gc::GcPolicy;
use storsim_ssd::SsdParams;

/// A complete `ssdconfig.xml` in MQSim's layout with its stock values but for a small
/// geometry, with `extra` placed inside `<Device_Parameter_Set>` and `flash_extra` inside
/// `<Flash_Parameter_Set>`.
fn ssdconfig(extra: &str, flash_extra: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="us-ascii"?>
<Execution_Parameter_Set>
	<Host_Parameter_Set>
		<PCIe_Lane_Bandwidth>1.00000</PCIe_Lane_Bandwidth>
		<PCIe_Lane_Count>4</PCIe_Lane_Count>
		<SATA_Processing_Delay>400000</SATA_Processing_Delay>
		<Enable_ResponseTime_Logging>false</Enable_ResponseTime_Logging>
		<ResponseTime_Logging_Period_Length>1000000</ResponseTime_Logging_Period_Length>
	</Host_Parameter_Set>
	<Device_Parameter_Set>
		<Seed>321</Seed>
		<Enabled_Preconditioning>false</Enabled_Preconditioning>
		<Memory_Type>FLASH</Memory_Type>
		<HostInterface_Type>NVME</HostInterface_Type>
		<IO_Queue_Depth>65535</IO_Queue_Depth>
		<Queue_Fetch_Size>512</Queue_Fetch_Size>
		<Caching_Mechanism>ADVANCED</Caching_Mechanism>
		<Data_Cache_Sharing_Mode>SHARED</Data_Cache_Sharing_Mode>
		<Data_Cache_Capacity>268435456</Data_Cache_Capacity>
		<Data_Cache_DRAM_Row_Size>8192</Data_Cache_DRAM_Row_Size>
		<Data_Cache_DRAM_Data_Rate>100</Data_Cache_DRAM_Data_Rate>
		<Data_Cache_DRAM_Data_Busrt_Size>1</Data_Cache_DRAM_Data_Busrt_Size>
		<Data_Cache_DRAM_tRCD>13</Data_Cache_DRAM_tRCD>
		<Data_Cache_DRAM_tCL>13</Data_Cache_DRAM_tCL>
		<Data_Cache_DRAM_tRP>13</Data_Cache_DRAM_tRP>
		<Address_Mapping>PAGE_LEVEL</Address_Mapping>
		<Ideal_Mapping_Table>false</Ideal_Mapping_Table>
		<CMT_Capacity>2097152</CMT_Capacity>
		<CMT_Sharing_Mode>SHARED</CMT_Sharing_Mode>
		<Plane_Allocation_Scheme>CWDP</Plane_Allocation_Scheme>
		<Transaction_Scheduling_Policy>PRIORITY_OUT_OF_ORDER</Transaction_Scheduling_Policy>
		<Overprovisioning_Ratio>0.07</Overprovisioning_Ratio>
		<GC_Exec_Threshold>0.05000</GC_Exec_Threshold>
		<GC_Block_Selection_Policy>RGA</GC_Block_Selection_Policy>
		<Use_Copyback_for_GC>false</Use_Copyback_for_GC>
		<Preemptible_GC_Enabled>false</Preemptible_GC_Enabled>
		<GC_Hard_Threshold>0.005000</GC_Hard_Threshold>
		<Dynamic_Wearleveling_Enabled>true</Dynamic_Wearleveling_Enabled>
		<Static_Wearleveling_Enabled>true</Static_Wearleveling_Enabled>
		<Static_Wearleveling_Threshold>100</Static_Wearleveling_Threshold>
		<Preferred_suspend_erase_time_for_read>700000</Preferred_suspend_erase_time_for_read>
		<Preferred_suspend_erase_time_for_write>700000</Preferred_suspend_erase_time_for_write>
		<Preferred_suspend_write_time_for_read>100000</Preferred_suspend_write_time_for_read>
		<Flash_Channel_Count>8</Flash_Channel_Count>
		<Flash_Channel_Width>1</Flash_Channel_Width>
		<Channel_Transfer_Rate>333</Channel_Transfer_Rate>
		<Chip_No_Per_Channel>2</Chip_No_Per_Channel>
		<Flash_Comm_Protocol>NVDDR2</Flash_Comm_Protocol>{extra}
		<Flash_Parameter_Set>
			<Flash_Technology>MLC</Flash_Technology>
			<CMD_Suspension_Support>ERASE</CMD_Suspension_Support>
			<Page_Read_Latency_LSB>75000</Page_Read_Latency_LSB>
			<Page_Read_Latency_CSB>75000</Page_Read_Latency_CSB>
			<Page_Read_Latency_MSB>80000</Page_Read_Latency_MSB>
			<Page_Program_Latency_LSB>750000</Page_Program_Latency_LSB>
			<Page_Program_Latency_CSB>750000</Page_Program_Latency_CSB>
			<Page_Program_Latency_MSB>900000</Page_Program_Latency_MSB>
			<Block_Erase_Latency>3800000</Block_Erase_Latency>
			<Block_PE_Cycles_Limit>10000</Block_PE_Cycles_Limit>
			<Suspend_Erase_Time>700000</Suspend_Erase_Time>
			<Suspend_Program_Time>100000</Suspend_Program_Time>
			<Die_No_Per_Chip>1</Die_No_Per_Chip>
			<Plane_No_Per_Die>2</Plane_No_Per_Die>
			<Block_No_Per_Plane>128</Block_No_Per_Plane>
			<Page_No_Per_Block>128</Page_No_Per_Block>
			<Page_Capacity>4096</Page_Capacity>
			<Page_Metadat_Capacity>224</Page_Metadat_Capacity>{flash_extra}
		</Flash_Parameter_Set>
	</Device_Parameter_Set>
</Execution_Parameter_Set>"#
    )
}

/// Writes `text` to a file named `name` in a fresh directory.
fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .unwrap();
    path
}

fn ssd_params(toml: &str) -> SsdParams {
    let spec = parse_device_toml(toml, "imported.toml").unwrap();
    spec.params::<SsdParams>()
        .expect("an MQSim device imports as an SSD")
        .clone()
}

#[test]
fn every_mapped_element_reaches_its_storsim_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(&dir, "ssdconfig.xml", &ssdconfig("", ""));
    let import = import(&config, None).unwrap();
    let p = ssd_params(&import.device_toml);
    let g = p.geometry;
    assert_eq!(
        (
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die
        ),
        (8, 2, 1, 2)
    );
    assert_eq!(
        (
            g.blocks_per_plane,
            g.pages_per_block,
            g.page_bytes,
            g.oob_bytes
        ),
        (128, 128, 4096, 0)
    );
    // MLC: the LSB and MSB times, not the CSB's.
    let t = &p.timing;
    assert_eq!(t.read[0].as_ns(), 75_000);
    assert_eq!(t.read[1].as_ns(), 80_000);
    assert_eq!(t.program[1].as_ns(), 900_000);
    assert_eq!(t.erase.as_ns(), 3_800_000);
    assert_eq!(p.endurance, 10_000);
    assert_eq!(p.seed, 321);
    assert!(!p.copyback);
    // A cached mapping table of 2 MiB: DFTL with that CMT.
    assert_eq!(p.ftl.name(), "dftl");
    let section = crate::ftl_section_toml(&p.ftl).unwrap();
    // MQSim's CMT entry: 8 × 2 × 1 × 2 × 128 × 128 = 2^19 physical pages, 8 sectors a page:
    // ceil((2 × 19 + 8) / 8) = 6 bytes, so 2 MiB holds 349,525 entries.
    assert!(section.contains("cmt_entries = 349525"), "{section}");
    // GC below ceil(5 % of 128) = 7 free blocks; RGA samples log2(128) = 7 blocks.
    assert!(section.contains("gc_low_watermark_blocks = 7"), "{section}");
    assert!(
        section.contains("gc_fraction_searched = 0.0546875"),
        "{section}"
    );
    assert!(
        section.contains("over_provisioning_fraction = 0.07"),
        "{section}"
    );
    // 256 MiB of DRAM; a page through DRAM at 100 MT/s, one byte a burst: 13 + 13 ns and
    // 4096 / 1 / 2 transfers of 10 ns.
    let buffer = p.write_buffer.unwrap();
    assert_eq!(buffer.capacity_bytes, 256 << 20);
    assert_eq!(buffer.latency.as_ns(), 26 + 2048 * 10);
}

#[test]
fn the_host_interface_is_mqsims_link_and_queues() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(&dir, "ssdconfig.xml", &ssdconfig("", ""));
    let import = import(&config, None).unwrap();
    let table: toml::Table = import.device_toml.parse().unwrap();
    let h = table["host_interface"].as_table().unwrap();
    assert_eq!(h["protocol"].as_str(), Some("nvme"));
    assert_eq!(h["lanes"].as_integer(), Some(4));
    assert_eq!(h["gigatransfers_per_s"].as_float(), Some(8.0));
    assert_eq!(h["queue_fetch_size"].as_integer(), Some(512));
    // 65,535 a queue does not fit eight pairs in 65,536 commands: a note says so.
    assert_eq!(h["queue_depth"].as_integer(), Some(8192));
    assert!(import
        .notes
        .iter()
        .any(|n| n.element == "IO_Queue_Depth" && n.text.contains("8192")));
}

#[test]
fn every_setting_without_an_equivalent_is_named_once_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = ssdconfig("", "");
    let config = file(&dir, "ssdconfig.xml", &text);
    let import = import(&config, None).unwrap();
    for element in [
        "Transaction_Scheduling_Policy",
        "CMD_Suspension_Support",
        "Preferred_suspend_erase_time_for_read",
        "GC_Hard_Threshold",
        "Page_Read_Latency_CSB",
        "Caching_Mechanism",
        "Page_Metadat_Capacity",
    ] {
        let notes: Vec<&Note> = import
            .notes
            .iter()
            .filter(|n| n.element == element)
            .collect();
        assert_eq!(notes.len(), 1, "{element}: {notes:?}");
        let line = text
            .lines()
            .position(|l| l.contains(&format!("<{element}>")))
            .unwrap() as u32
            + 1;
        assert_eq!(notes[0].line, line, "{}", notes[0]);
    }
    // Settings that map, or that are off, make no note.
    for element in [
        "Flash_Channel_Count",
        "Preemptible_GC_Enabled",
        "Enable_ResponseTime_Logging",
    ] {
        assert!(
            import.notes.iter().all(|n| n.element != element),
            "{element}"
        );
    }
}

#[test]
fn bad_files_are_refused_naming_the_line_and_the_element() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            ssdconfig("\n\t\t<Flash_Chanel_Count>8</Flash_Chanel_Count>", ""),
            "<Flash_Chanel_Count>: not a parameter",
        ),
        (ssdconfig("\n\t\t<Seed>7</Seed>", ""), "<Seed>: given twice"),
        (
            ssdconfig("", "\n\t\t\t<Flash_Technology>QLC</Flash_Technology>"),
            "<Flash_Technology>: given twice",
        ),
        (
            ssdconfig("", "").replace(">MLC<", ">QLC<"),
            "`QLC` is not one of SLC, MLC, TLC",
        ),
        (
            ssdconfig("", "").replace("<Page_Capacity>4096", "<Page_Capacity>-4"),
            "<Page_Capacity>: `-4` is not a whole number",
        ),
        (
            ssdconfig("", "").replace(
                "<Overprovisioning_Ratio>0.07",
                "<Overprovisioning_Ratio>1.5",
            ),
            "<Overprovisioning_Ratio>: 1.5 is out of range",
        ),
        (
            ssdconfig("", "").replace("<Block_Erase_Latency>3800000</Block_Erase_Latency>", ""),
            "<Block_Erase_Latency>: is required",
        ),
        (
            ssdconfig("", "").replace("</Host_Parameter_Set>", ""),
            "not well-formed XML",
        ),
        (
            "<Execution_Parameters/>".to_string(),
            "starts with <Execution_Parameter_Set>",
        ),
    ];
    for (text, expected) in cases {
        let config = file(&dir, "bad.xml", &text);
        let e = import(&config, None).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:", config.display())), "{e}");
        assert!(e.contains(expected), "expected `{expected}` in: {e}");
        // The line is the element's own.
        let line: usize = e.split(':').nth(1).unwrap().parse().unwrap();
        assert!(line >= 1 && line <= text.lines().count().max(1), "{e}");
    }
}

/// A workload of one scenario with a synthetic and a trace flow, each setting shown.
fn workload(trace: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios>
	<IO_Scenario>
		<IO_Flow_Parameter_Set_Synthetic>
			<Priority_Class>URGENT</Priority_Class>
			<Device_Level_Data_Caching_Mode>TURNED_OFF</Device_Level_Data_Caching_Mode>
			<Channel_IDs>0,1,2,3</Channel_IDs>
			<Chip_IDs>0,1</Chip_IDs>
			<Die_IDs>0</Die_IDs>
			<Plane_IDs>0,1</Plane_IDs>
			<Initial_Occupancy_Percentage>50</Initial_Occupancy_Percentage>
			<Working_Set_Percentage>50</Working_Set_Percentage>
			<Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
			<Read_Percentage>70</Read_Percentage>
			<Address_Distribution>RANDOM_HOTCOLD</Address_Distribution>
			<Percentage_of_Hot_Region>20</Percentage_of_Hot_Region>
			<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
			<Address_Alignment_Unit>16</Address_Alignment_Unit>
			<Request_Size_Distribution>FIXED</Request_Size_Distribution>
			<Average_Request_Size>8</Average_Request_Size>
			<Variance_Request_Size>0</Variance_Request_Size>
			<Seed>798</Seed>
			<Average_No_of_Reqs_in_Queue>16</Average_No_of_Reqs_in_Queue>
			<Intensity>32768</Intensity>
			<Stop_Time>1000000000</Stop_Time>
			<Total_Requests_To_Generate>0</Total_Requests_To_Generate>
		</IO_Flow_Parameter_Set_Synthetic>
		<IO_Flow_Parameter_Set_Trace_Based>
			<Priority_Class>LOW</Priority_Class>
			<Device_Level_Data_Caching_Mode>WRITE_CACHE</Device_Level_Data_Caching_Mode>
			<Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
			<Chip_IDs>0,1</Chip_IDs>
			<Die_IDs>0</Die_IDs>
			<Plane_IDs>0,1</Plane_IDs>
			<Initial_Occupancy_Percentage>70</Initial_Occupancy_Percentage>
			<File_Path>{trace}</File_Path>
			<Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>
			<Relay_Count>1</Relay_Count>
			<Time_Unit>NANOSECOND</Time_Unit>
		</IO_Flow_Parameter_Set_Trace_Based>
	</IO_Scenario>
</MQSim_IO_Scenarios>"#
    )
}

#[test]
fn a_scenarios_flows_share_the_space_as_mqsims_do_and_read_back_as_flows() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(&dir, "ssdconfig.xml", &ssdconfig("", ""));
    file(&dir, "tiny.trace", "0 0 0 8 1\n1000 0 8 8 0\n");
    let work = file(&dir, "workload.xml", &workload("tiny.trace"));
    let import = import(&config, Some(&work)).unwrap();
    assert_eq!(import.scenarios.len(), 1);
    // No preconditioning in MQSim: the plain device, and a note on each occupancy.
    assert!(import.scenarios[0].device_toml.is_none());
    let occupancy = import
        .notes
        .iter()
        .filter(|n| n.element == "Initial_Occupancy_Percentage");
    assert_eq!(occupancy.count(), 2);
    let flows_path = file(&dir, "scenario-1.toml", &import.scenarios[0].flows_toml);
    let flows = storsim_workload::flows::read_file(&flows_path).unwrap();
    assert_eq!(flows.len(), 2);
    let (synth, trace) = (&flows[0], &flows[1]);
    assert_eq!(synth.name, "Host.IO_Flow.Synth.No_0");
    for part in [
        "rw=randrw,rwmixread=70",
        "dist=hotcold:0.2:0.8",
        "bs=4096",
        "align=8192",
        "seed=798",
        "iodepth=16",
        "duration=1000000000ns",
    ] {
        assert!(
            synth.workload.contains(part),
            "{part} in {}",
            synth.workload
        );
    }
    // Flow 0 of 2 has the first half of the space, of which its working set is half.
    let lba = synth.lba.as_ref().unwrap();
    assert_eq!(lba.offset, storsim_workload::flows::Extent::Percent(0.0));
    assert_eq!(
        lba.size,
        Some(storsim_workload::flows::Extent::Percent(25.0))
    );
    assert_eq!(
        trace.lba.as_ref().unwrap().offset,
        storsim_workload::flows::Extent::Percent(50.0)
    );
    let resources = synth.resources.as_ref().unwrap();
    assert_eq!(resources.channels, [0, 1, 2, 3]);
    // The trace flow keeps every channel (none named), its path resolved from the workload's
    // folder.
    assert!(trace.resources.is_none());
    assert!(trace.workload.ends_with("tiny.trace") && Path::new(&trace.workload).exists());
    assert_eq!(format!("{:?}", synth.class), "Urgent");
}

#[test]
fn a_preconditioned_scenario_gets_its_own_device_filled_to_its_occupancy() {
    let dir = tempfile::tempdir().unwrap();
    let text = ssdconfig("", "").replace(
        "<Enabled_Preconditioning>false",
        "<Enabled_Preconditioning>true",
    );
    let config = file(&dir, "ssdconfig.xml", &text);
    file(&dir, "tiny.trace", "0 0 0 8 1\n");
    let work = file(&dir, "workload.xml", &workload("tiny.trace"));
    let import = import(&config, Some(&work)).unwrap();
    let device = import.scenarios[0].device_toml.as_ref().unwrap();
    let p = ssd_params(device);
    // The flows' occupancies, 50 % and 70 %, filled as one mean of 60 %.
    assert_eq!(
        format!("{:?}", p.precondition),
        format!(
            "{:?}",
            storsim_ssd::Precondition::SequentialFill { fraction: 0.6 }
        )
    );
}

#[test]
fn random_pp_takes_its_threshold_from_each_scenarios_highest_occupancy() {
    let dir = tempfile::tempdir().unwrap();
    let text = ssdconfig("", "").replace(
        "<GC_Block_Selection_Policy>RGA",
        "<GC_Block_Selection_Policy>RANDOM_PP",
    );
    let config = file(&dir, "ssdconfig.xml", &text);
    let policy = |toml: &str| {
        let p = ssd_params(toml);
        p.ftl
            .params::<storsim_ftl::dftl::Params>()
            .map(|d| d.page.gc_policy)
            .or(p
                .ftl
                .params::<storsim_ftl::page::Params>()
                .map(|p| p.gc_policy))
            .expect("a page-mapped FTL")
    };
    let threshold = |min_invalid_fraction| GcPolicy::RandomThreshold {
        min_invalid_fraction,
    };
    // The device alone: MQSim's threshold with no flow is none.
    let alone = import(&config, None).unwrap();
    assert_eq!(policy(&alone.device_toml), threshold(0.0));
    // With the workload, whose flows start 50 % and 70 % full: the higher, as MQSim's max_rho.
    file(&dir, "tiny.trace", "0 0 0 8 1\n");
    let work = file(&dir, "workload.xml", &workload("tiny.trace"));
    let with = import(&config, Some(&work)).unwrap();
    let device = with.scenarios[0]
        .device_toml
        .as_ref()
        .expect("a RANDOM_PP scenario has its own device");
    assert_eq!(policy(device), threshold(0.7));
}

#[test]
fn mqsims_stock_files_import_whole() {
    let Some(stock) = storsim_testenv::shared("mqsim-ref/stock") else {
        return;
    };
    let import = import(
        &stock.join("ssdconfig.xml"),
        Some(&stock.join("workload.xml")),
    )
    .unwrap();
    let p = ssd_params(&import.device_toml);
    // 8 channels × 4 chips × 2 dies × 2 planes × 2048 blocks × 256 pages of 8 KiB: 512 GiB.
    assert_eq!(
        u64::from(p.geometry.pages()) * u64::from(p.geometry.page_bytes),
        512 << 30
    );
    assert_eq!(import.scenarios.len(), 3);
    for (k, s) in import.scenarios.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let flows = file(&dir, "flows.toml", &s.flows_toml);
        let read = storsim_workload::flows::read_file(&flows)
            .unwrap_or_else(|e| panic!("scenario {}: {e}", k + 1));
        assert_eq!(read.len(), if k == 2 { 1 } else { 2 });
    }
}

#[test]
fn mqsims_bench2g_configuration_is_the_bench2g_presets_flash() {
    let Some(dir) = storsim_testenv::shared("mqsim-ref/bench2g") else {
        return;
    };
    let import = import(&dir.join("ssdconfig.xml"), None).unwrap();
    let imported = ssd_params(&import.device_toml);
    let preset = crate::preset_spec("bench2g").unwrap().unwrap();
    let preset = preset.params::<SsdParams>().unwrap();
    // The preset was written from MQSim's stock timings and this geometry: the same flash, but
    // for the spare area, which the preset moves over the channel with each page (224 bytes)
    // and MQSim does not.
    let spare = |g: storsim_flash::Geometry| storsim_flash::Geometry { oob_bytes: 0, ..g };
    assert_eq!(spare(imported.geometry), spare(preset.geometry));
    assert_eq!(imported.timing.read, preset.timing.read);
    assert_eq!(imported.timing.program, preset.timing.program);
    assert_eq!(imported.timing.erase, preset.timing.erase);
    assert_eq!(imported.endurance, preset.endurance);
    assert_eq!(
        imported.write_buffer.map(|b| b.capacity_bytes),
        preset.write_buffer.map(|b| b.capacity_bytes)
    );
}

#[test]
fn a_trace_flows_unit_relays_and_share_are_done_as_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(&dir, "ssdconfig.xml", &ssdconfig("", ""));
    file(
        &dir,
        "t.trace",
        "0 0 0 8 1\n5 0 8 8 1\n\n9 0 16 8 0\n12 0 24 8 1\n",
    );
    let text = workload("t.trace")
        .replace(">NANOSECOND<", ">MICROSECOND<")
        .replace("<Relay_Count>1<", "<Relay_Count>3<")
        .replace(
            "<Percentage_To_Be_Executed>100<",
            "<Percentage_To_Be_Executed>50<",
        );
    let work = file(&dir, "workload.xml", &text);
    let import = import(&config, Some(&work)).unwrap();
    let flows = file(&dir, "flows.toml", &import.scenarios[0].flows_toml);
    let trace = &storsim_workload::flows::read_file(&flows).unwrap()[1];
    assert_eq!(trace.time_scale, Some(1000.0));
    assert_eq!(trace.repeat, 3);
    // Half of the trace's four requests (the blank line is none).
    assert_eq!(trace.head, Some(2));
    // The unit is noted, since MQSim's own run would not have applied it.
    assert!(import.notes.iter().any(|n| n.element == "Time_Unit"));
    // A share of a trace that is not there is an error naming the element.
    let work = file(
        &dir,
        "gone.xml",
        &workload("gone.trace").replace(
            "<Percentage_To_Be_Executed>100<",
            "<Percentage_To_Be_Executed>50<",
        ),
    );
    let e = super::import(&config, Some(&work)).unwrap_err().to_string();
    assert!(e.contains("<File_Path>") && e.contains("gone.trace"), "{e}");
}

#[test]
fn notes_are_single_lines_of_single_spaced_words() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(&dir, "ssdconfig.xml", &ssdconfig("", ""));
    for note in import(&config, None).unwrap().notes {
        assert!(
            !note.text.contains("  ") && !note.text.contains('\n'),
            "{note}"
        );
    }
}

#[test]
fn without_suspension_reads_still_go_first_and_the_suspend_times_are_noted() {
    let dir = tempfile::tempdir().unwrap();
    let text = ssdconfig("", "").replace(
        "<CMD_Suspension_Support>ERASE<",
        "<CMD_Suspension_Support>NONE<",
    );
    let config = file(&dir, "ssdconfig.xml", &text);
    let import = import(&config, None).unwrap();
    let p = ssd_params(&import.device_toml);
    assert_eq!(p.die_scheduling, storsim_flash::DieScheduling::ReadPriority);
    for element in ["Suspend_Erase_Time", "Suspend_Program_Time"] {
        assert!(
            import.notes.iter().any(|n| n.element == element),
            "{element}"
        );
    }
}

#[test]
fn a_device_argument_takes_mqsims_configuration_unchanged_with_overrides_on_top() {
    let dir = tempfile::tempdir().unwrap();
    let config = file(&dir, "ssdconfig.xml", &ssdconfig("", ""));
    let arg = config.to_str().unwrap();
    let loaded = crate::load_device(arg).unwrap();
    let direct = ssd_params(&import(&config, None).unwrap().device_toml);
    assert_eq!(loaded.spec.params::<SsdParams>().unwrap(), &direct);
    let set = ["ssd.geometry.channels=4".to_string()];
    let loaded = crate::load_device_with(arg, &set).unwrap();
    assert_eq!(
        loaded.spec.params::<SsdParams>().unwrap().geometry.channels,
        4
    );
    // A broken configuration is refused as the import refuses it, naming the line.
    let bad = file(&dir, "bad.xml", &ssdconfig("\n\t\t<Sed>1</Sed>", ""));
    let e = crate::load_device(bad.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("<Sed>: not a parameter"), "{e}");
}

#[test]
fn a_sata_device_takes_the_processing_delay_and_notes_the_pcie_link() {
    let dir = tempfile::tempdir().unwrap();
    let text = ssdconfig("", "").replace(">NVME<", ">SATA<");
    let config = file(&dir, "ssdconfig.xml", &text);
    let import = import(&config, None).unwrap();
    let table: toml::Table = import.device_toml.parse().unwrap();
    let h = table["host_interface"].as_table().unwrap();
    assert_eq!(h["protocol"].as_str(), Some("sata"));
    // SATA_Processing_Delay 400,000 ns; NCQ holds 32 of IO_Queue_Depth's 65,535.
    assert_eq!(h["command_processing_us"].as_float(), Some(400.0));
    assert_eq!(h["queue_depth"].as_integer(), Some(32));
    for element in ["PCIe_Lane_Bandwidth", "PCIe_Lane_Count", "Queue_Fetch_Size"] {
        assert!(
            import.notes.iter().any(|n| n.element == element),
            "{element}"
        );
    }
    parse_device_toml(&import.device_toml, "sata.toml").unwrap();
}
