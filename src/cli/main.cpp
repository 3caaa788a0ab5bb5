// The tessera command (placeholder until the driver lands).
int main() { return 0; }
