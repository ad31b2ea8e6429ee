// mimalloc, not glibc's malloc: see BENCHMARKS.md, "The daemon at fleet scale".
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = daemonsync::cli::Cli::parse_or_exit();
    daemonsync::cli::init_logging(&cli);
    let runtime = match daemonsync::cli::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            std::process::exit(daemonsync::cli::EXIT_ERROR);
        }
    };
    let code = runtime.block_on(daemonsync::cli::run(cli));
    // Tasks still running (a watcher, a server's connection) are not waited for.
    runtime.shutdown_background();
    std::process::exit(code);
}
