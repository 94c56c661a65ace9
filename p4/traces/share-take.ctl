# control steps: before the input frame with timestamp TS (us), the software
# switch's command, then BMv2's (simple_switch_CLI); - for none
1000000000360000	pool take 6 1	register_write take_reg 129 1
1000000000500000	-	register_write lease_reg 130 202
1000000000680000	pool take 6 2	register_write take_reg 130 1
1000000000800000	-	register_write lease_reg 130 202
