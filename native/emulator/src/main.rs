//! `cga-emu`: placeholder until the link emulator lands.
fn main() {
    eprintln!("cga-emu: not implemented yet");
    std::process::exit(2);
}
