fn main() {
    let cli = daemonsync::cli::Cli::parse_or_exit();
    daemonsync::cli::init_logging(&cli);
    std::process::exit(daemonsync::cli::run(cli));
}
