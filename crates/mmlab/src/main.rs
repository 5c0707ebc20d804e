fn main() {
    println!("mmlab: work in progress");
}
