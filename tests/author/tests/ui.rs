//! The macro's refusals reach an author who depends on `kyro` alone.
#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
