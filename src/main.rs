fn main() {
    let cli = daemonsync::cli::Cli::parse_or_exit();
    daemonsync::cli::init_logging();
    std::process::exit(daemonsync::cli::run(cli));
}
