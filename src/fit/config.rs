//! `--config config.json`: a HF-style config's fields as script arguments (`n_layer=24`), which
//! the script reads with `arg("n_layer", 12)`; arguments on the command line override them.
use std::path::Path;

use serde_json::Value;

/// The config's top-level scalar fields as `NAME=VALUE` arguments, in name order.
pub fn args(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--config {}: cannot read it: {e}", path.display()))?;
    let config: Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "--config {}: not JSON ({e}); give a config such as a Hugging Face config.json",
            path.display()
        )
    })?;
    let Value::Object(fields) = config else {
        return Err(format!(
            "--config {}: expected a JSON object of fields (\"n_layer\": 24, …)",
            path.display()
        ));
    };
    Ok(fields
        .iter()
        .filter_map(|(name, value)| {
            let value = match value {
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                // Lists and nested objects (architectures, task parameters) are no argument.
                _ => return None,
            };
            Some(format!("{name}={value}"))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_fields_become_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"n_layer": 24, "n_embd": 1024, "torch_dtype": "float32", "architectures": ["GPT2LMHeadModel"], "tie": true}"#,
        )
        .unwrap();
        assert_eq!(
            args(&path).unwrap(),
            [
                "n_embd=1024",
                "n_layer=24",
                "tie=true",
                "torch_dtype=float32"
            ]
        );
        std::fs::write(&path, "[1, 2]").unwrap();
        assert!(args(&path).unwrap_err().contains("JSON object"));
    }
}
