pub struct Style;

impl Style {
    pub fn default_width() -> usize {
        width()
    }
}

pub fn width() -> usize {
    80
}
