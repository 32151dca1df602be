//! Control loops kube-apiserver leaves to other components but that a lone kapi needs for the
//! API to behave as users expect (upstream runs them in kube-controller-manager). Each works
//! only through the storage interface, like any other client of the store.

pub mod customresourcedefinitions;
pub mod namespace;
pub mod service_accounts;
