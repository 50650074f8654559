fn main() {
    println!("relay: under construction");
}
