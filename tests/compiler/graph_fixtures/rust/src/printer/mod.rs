mod style;

use crate::config::Config;
use self::style::Style;

pub trait Printer {
    fn print(&self, cfg: &Config) -> usize;
    fn header(&self) -> usize {
        1
    }
}

pub struct Plain;

impl Printer for Plain {
    fn print(&self, cfg: &Config) -> usize {
        if cfg.is_empty() {
            return 0;
        }
        self.header() + Style::default_width()
    }
}

pub fn print_all(cfg: &Config) -> usize {
    let p = Plain;
    p.print(cfg) + style::width()
}
