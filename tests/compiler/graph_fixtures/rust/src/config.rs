pub struct Config {
    pub path: String,
}

impl Config {
    pub fn new(path: &str) -> Self {
        Config { path: normalize(path) }
    }

    pub fn is_empty(&self) -> bool {
        self.path.is_empty()
    }
}

fn normalize(p: &str) -> String {
    p.trim().to_string()
}
