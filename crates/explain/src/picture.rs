//! A picture for rich front ends (an SVG chart with its text form), optionally one that replaces itself.

/// An image a notebook shows as `image/svg+xml`; terminals print its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picture {
    /// What a terminal prints instead.
    pub plain: String,
    /// The SVG document.
    pub svg: String,
    /// A name for the output, so a later picture can replace it (`update_display_data`).
    pub display_id: Option<String>,
    /// Replace the output named `display_id` instead of showing a new one.
    pub update: bool,
}
