//! The `#[tool]` macro's refusals (one per file in tests/ui/) and a complete tool that compiles.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
