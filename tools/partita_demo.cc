// Placeholder demo, replaced once the BlockBuilder and printer exist.
#include <iostream>
int main() { std::cout << "partita\n"; }
