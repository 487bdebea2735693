//! Exports a RAM-backed file until someone unmounts the directory.
//!
//! ```text
//! cargo run -p storsim-fuse --example memdisk -- /mnt/storsim 256
//! losetup --direct-io=on -f --show /mnt/storsim/disk
//! ```

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use storsim_fuse::{Command, FileExport, Handler, Mount, MountOptions, Reply, Request};

struct Memory(Mutex<Vec<u8>>);

impl Handler for Memory {
    fn request(&self, request: Request, reply: Reply) {
        let mut data = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let range = request.offset as usize..(request.offset + request.length as u64) as usize;
        match request.command {
            Command::Read => reply.data(&data[range]),
            Command::Write => {
                data[range].copy_from_slice(&request.data);
                reply.ok();
            }
            Command::Fsync => reply.ok(),
            Command::Trim => {
                data[range].fill(0);
                reply.ok();
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(mib)) = (args.next(), args.next()) else {
        eprintln!("usage: memdisk DIR SIZE_MIB");
        std::process::exit(2);
    };
    let Ok(mib) = mib.parse::<u64>() else {
        eprintln!("memdisk: SIZE_MIB must be a whole number");
        std::process::exit(2);
    };
    let size = mib << 20;
    let handler = Arc::new(Memory(Mutex::new(vec![0; size as usize])));
    let options = MountOptions {
        log: Arc::new(|line| eprintln!("{line}")),
        ..MountOptions::default()
    };
    let export = FileExport {
        file_name: "disk".to_string(),
        size_bytes: size,
        read_only: false,
    };
    let mount = match Mount::mount(&PathBuf::from(dir), export, options, handler) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("memdisk: {e}");
            std::process::exit(1);
        }
    };
    eprintln!(
        "memdisk: {} is ready; unmount the directory to stop",
        mount.file_path().display()
    );
    mount.wait();
    if let Err(e) = mount.unmount() {
        eprintln!("memdisk: {e}");
    }
}
