fn main() {
    let cli = daemonsync::cli::Cli::parse_or_exit();
    std::process::exit(daemonsync::cli::run(cli));
}
