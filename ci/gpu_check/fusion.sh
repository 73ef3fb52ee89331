# ci/gpu_check.sh's `fusion` part (sourced by it, with its helpers and variables).
# Fusion's gain measured in one call (Note [fusion] in framework/graph/fusion.h):
# every model with pairs to fuse (the ResNets, vgg16bn, the cnn) in full
# capture with fusion on and off (--no-fusion), beside the PyTorch peer's
# whole-step graph; then where resnet50's fused step goes. TR_FUSION_MODELS
# narrows the models.
beside_peer fusion "${TR_FUSION_MODELS:-resnet50,resnet18,vgg16bn,cnn}" on off=--no-fusion
timeout ${TR_T_FUSION_TOP:-100} "$BIN/tr-bench" --device cuda --mode full-capture --optimizer sgd --precision amp \
  --model resnet50 --batch 256 --warmup 5 --iters 20 --repetitions 3 --top-kernels 15 \
  --json "$OUT/fusion_top_resnet50.json" > "$OUT/fusion_top_resnet50.log" 2>&1 || status=1
note "resnet50 b256 fused, top kernels"
tee -a "$OUT/summary.txt" < "$OUT/fusion_top_resnet50.log"
