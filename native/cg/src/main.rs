//! `cga-cg`: placeholder until the CG traffic generator lands.
fn main() {
    eprintln!("cga-cg: not implemented yet");
    std::process::exit(2);
}
