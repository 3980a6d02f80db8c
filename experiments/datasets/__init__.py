"""Synthetic stand-ins for the data sets the papers read: ImageNet-like JPEGs sized by a mix of
size ranges (:mod:`.imagenet_like`, used by Chien et al.'s tf.data benchmark, DeepIO and the blog)
and a Caltech-101-like set of JPEGs and PNGs (:mod:`.caltech_like`, used by Chien et al.'s
AlexNet runs). :mod:`.report` compares each generated set's size distribution with the paper's.
"""
