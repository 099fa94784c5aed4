pub mod config;
pub mod printer;

use crate::config::Config;

pub fn run(path: &str) -> usize {
    let cfg = Config::new(path);
    printer::print_all(&cfg)
}
