set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv
python3 -c 'import torch, triton; print(torch.__version__, triton.__version__)'
for s in mutated cpu dynamic aoti provenance; do
  d=/tmp/gpu_$s; mkdir -p $d/trace; export WORK=$d
  ( cd $d && TORCH_TRACE=$d/trace TORCH_LOGS=recompiles,graph_breaks,cudagraphs,perf_hints,dynamic timeout 240 python3 $OLDPWD/.gpu/cg.py $s 2> $d/torch_logs.txt; echo "rc=$?" > $d/rc.txt )
  cat $d/rc.txt; tail -3 $d/torch_logs.txt; ls -la $d/trace
  rm -f $d/m.pt2
  tar -C /tmp -czf $OUT/gpu_$s.tgz gpu_$s
done
