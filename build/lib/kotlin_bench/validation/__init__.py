"""Task validation the Multi-SWE-bench way: phases in containers, and the lists derived from them."""
