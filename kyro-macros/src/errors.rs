//! The error collector: every mistake is recorded with its span, and reported at once.

use std::cell::{Cell, RefCell};
use std::fmt::Display;

use quote::ToTokens;

/// Collects `syn::Error`s. Panics on drop unless [`Errors::finish`] was called, so no
/// recorded mistake can be forgotten.
#[derive(Default)]
pub struct Errors {
    errors: RefCell<Option<syn::Error>>,
    finished: Cell<bool>,
}

impl Errors {
    /// Records a mistake at the tokens of `at`.
    pub fn at(&self, at: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(at, message));
    }

    /// Records a mistake at a span.
    pub fn at_span(&self, span: proc_macro2::Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records a parse error as it is.
    pub fn push(&self, error: syn::Error) {
        let mut errors = self.errors.borrow_mut();
        match errors.as_mut() {
            Some(all) => all.combine(error),
            None => *errors = Some(error),
        }
    }

    /// Every recorded mistake as one error, or `Ok` when there were none.
    pub fn finish(&self) -> syn::Result<()> {
        self.finished.set(true);
        match self.errors.borrow_mut().take() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if !self.finished.get() && !std::thread::panicking() {
            panic!("kyro-macros: Errors dropped without finish()");
        }
    }
}
