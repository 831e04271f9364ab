//! `kubectl-mesh_doctor`: everything is in [`mesh_doctor::cli::main_impl`].

fn main() -> std::process::ExitCode {
    mesh_doctor::cli::main_impl()
}
