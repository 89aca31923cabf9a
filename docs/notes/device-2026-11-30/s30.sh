# the operators of loan-1921's optimized graphs that the h200 table lacks
# (the products with a residual epilogue among them), measured alone into a
# fresh database, exported
source .gpu-pack/bin/env.sh
mkdir -p $W/meas
export SUPEROPT_COSTDB=/tmp/c.sqlite
timeout 240 $B/superopt costdb measure .gpu-pack/bin/meas/*.graph > $W/meas/measure.log 2>&1
$B/superopt costdb export --db /tmp/c.sqlite --device h200 -o $W/meas/h200.tsv >> $W/meas/measure.log 2>&1
echo "call 30 end $(($(date +%s) - t0)) s" >>$W/times.txt
pack
