//! Prints the selection counts of a BTF file (development aid).
fn main() {
    let p = std::env::args().nth(1).expect("BTF file");
    let depth = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1);
    let btf = magnet_funcs::Btf::from_file(std::path::Path::new(&p)).unwrap();
    let rules = magnet_funcs::Rules {
        pointer_depth: depth,
    };
    let sel = magnet_funcs::select(&btf, rules);
    println!(
        "{:#?} loose {}",
        sel.summary(rules, None),
        sel.loose_count()
    );
}
