//! The names closest to one that was asked for and does not exist (a misspelt tool, an
//! unknown argument field, a policy key): a small edit distance, closest first.

/// Names within a small edit distance of `wanted`, closest first.
pub fn suggest<'a>(wanted: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(usize, &str)> = names
        .map(|n| (edit_distance(wanted, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3) || n.contains(wanted))
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, n)| n.to_owned()).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(cur).min(row[j]) };
            prev = cur;
        }
    }
    row[b.len()]
}
