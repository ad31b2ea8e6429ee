use clap::Parser;

fn main() {
    let cli = daemonsync::cli::Cli::parse();
    std::process::exit(daemonsync::cli::run(cli));
}
